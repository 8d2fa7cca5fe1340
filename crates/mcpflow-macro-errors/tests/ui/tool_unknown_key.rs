use mcpflow_macros::tool;

/// A misspelled key.
#[tool(nmae = "sum")]
async fn add() -> Result<String, String> {
    Ok(String::new())
}

fn main() {}
