use mcpflow_macros::resource;

/// Unbalanced braces.
#[resource("items://{id/data")]
async fn item(id: String) -> Result<String, String> {
    Ok(id)
}

/// A form the matcher does not read.
#[resource("search://items{?q}")]
async fn search(q: String) -> Result<String, String> {
    Ok(q)
}

fn main() {}
