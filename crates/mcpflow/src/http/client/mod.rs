//! The streamable HTTP client transport.
