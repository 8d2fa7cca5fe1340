//! mcpflow
