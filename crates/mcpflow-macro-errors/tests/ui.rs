//! Compile-time errors: each `tests/ui/*.rs` must fail with the message and span in its
//! `.stderr` (regenerate with `TRYBUILD=overwrite cargo test -p mcpflow-macro-errors --test ui`
//! and review the diff).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
