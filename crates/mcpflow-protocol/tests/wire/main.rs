//! The wire types: JSON read and written back unchanged (`roundtrip`), frames in every
//! layout and damaged at random through the decoder (`mutations`), messages checked
//! against each version's official schema (`schema`, `schema_2026`), and every official
//! 2026-07-28 example read and written back (`examples_2026`).

mod examples_2026;
mod mutations;
mod roundtrip;
mod schema;
mod schema_2026;
