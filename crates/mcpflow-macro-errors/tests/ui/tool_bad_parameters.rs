struct ServerContext; // the macros know mcpflow's by its name
use mcpflow_macros::tool;

struct Args;

/// The context must come last.
#[tool]
async fn context_first(cx: ServerContext, args: Args) -> Result<String, String> {
    let _ = (cx, args);
    Ok(String::new())
}

/// Inputs go in one argument struct.
#[tool]
async fn two_structs(a: Args, b: Args) -> Result<String, String> {
    let _ = (a, b);
    Ok(String::new())
}

struct Counter;

impl Counter {
    /// A method needs `#[tools]` on its impl block.
    #[tool]
    async fn get(&self) -> Result<String, String> {
        Ok(String::new())
    }
}

struct State;

#[mcpflow_macros::tools]
impl State {
    /// `&mut self` cannot be shared behind an `Arc`.
    #[tool]
    async fn bump(&mut self) -> Result<String, String> {
        Ok(String::new())
    }
}

fn main() {}
