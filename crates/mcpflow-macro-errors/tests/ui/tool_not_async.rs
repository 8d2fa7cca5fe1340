use mcpflow_macros::tool;

/// Not async.
#[tool]
fn add() -> Result<String, String> {
    Ok(String::new())
}

fn main() {}
