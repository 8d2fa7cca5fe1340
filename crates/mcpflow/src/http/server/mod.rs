//! The streamable HTTP server.
