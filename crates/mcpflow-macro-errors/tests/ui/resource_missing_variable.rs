use mcpflow_macros::resource;

/// The template's variables must be received.
#[resource("items://{id}/{part}")]
async fn item(id: String) -> Result<String, String> {
    Ok(id)
}

/// A parameter that is neither a variable, `uri`, the map nor the context.
#[resource("notes://today")]
async fn today(path: String) -> Result<String, String> {
    Ok(path)
}

fn main() {}
