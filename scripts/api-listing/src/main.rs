//! `api-listing CRATE.json`: the public API that rustdoc JSON describes, one item per line,
//! sorted, without blanket impls (which change with the dependencies' versions).

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: api-listing CRATE.json (rustdoc JSON, format 57)");
        return ExitCode::from(2);
    };
    let api = match public_api::Builder::from_rustdoc_json(&path)
        .omit_blanket_impls(true)
        .build()
    {
        Ok(api) => api,
        Err(e) => {
            eprintln!(
                "api-listing: {}: {e}",
                std::path::Path::new(&path).display()
            );
            return ExitCode::FAILURE;
        }
    };
    for item in api.items() {
        println!("{item}");
    }
    ExitCode::SUCCESS
}
