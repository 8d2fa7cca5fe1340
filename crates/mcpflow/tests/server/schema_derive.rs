//! `mcpflow::JsonSchema`'s derive gives the schema schemars' own derive gives: each type
//! below is declared twice from the same tokens, once with each derive, and the two
//! generated schemas (and their names and ids) must be equal.

use serde_json::Value;

macro_rules! both {
    ($($item:item)*) => {
        mod ours {
            #![allow(dead_code)]
            use mcpflow::JsonSchema;
            use serde::Deserialize;
            $($item)*
        }
        mod theirs {
            #![allow(dead_code)]
            use schemars::JsonSchema;
            use serde::Deserialize;
            $($item)*
        }
    };
}

both! {
    /// Two numbers to add.
    ///
    /// The second line of the description.
    #[derive(Deserialize, JsonSchema)]
    pub struct Add {
        /// The first number.
        pub a: i64,
        #[serde(default)]
        pub b: Option<i64>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Options {
        pub max_items: u32,
        #[serde(rename = "q")]
        #[schemars(length(min = 1, max = 80))]
        pub query: String,
        #[serde(skip)]
        pub cache: Vec<u8>,
        #[serde(flatten)]
        pub paging: Paging,
        #[schemars(range(min = 1, max = 10), description = "How many.")]
        pub count: u8,
    }

    #[derive(Deserialize, JsonSchema)]
    pub struct Paging {
        pub cursor: Option<String>,
    }

    /// What to do.
    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    pub enum Action {
        /// Stop now.
        Stop,
        Move { x: i32, y: i32 },
        Say(Paging),
    }

    #[derive(Deserialize, JsonSchema)]
    pub enum Plain {
        A,
        #[serde(rename = "bee")]
        B,
        C(u8, String),
    }

    #[derive(Deserialize, JsonSchema)]
    pub struct Generic<T: Clone, const N: usize>
    where
        T: std::fmt::Debug,
    {
        pub items: Vec<T>,
        pub nested: Box<Option<Generic<T, N>>>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(transparent)]
    pub struct Meters(pub f64);

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all(deserialize = "UPPERCASE"), rename = "Renamed")]
    pub struct Original {
        pub meters: Meters,
        pub action: Action,
        pub plain: Plain,
    }

    #[derive(Deserialize, JsonSchema)]
    #[schemars(rename = "Pair_of_{T}")]
    pub struct Pair<T> {
        pub left: T,
        pub right: T,
    }

    #[derive(Deserialize, JsonSchema)]
    pub struct Lifetimes<'a> {
        pub name: &'a str,
    }
}

fn generate<T: schemars::JsonSchema>() -> (String, String, Value) {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    (
        T::schema_name().into_owned(),
        T::schema_id().into_owned(),
        schema.to_value(),
    )
}

/// The schema of `ours::$ty` and `theirs::$ty`, with the module names in ids aligned.
macro_rules! assert_same {
    ($($ty:ident $(<$($arg:tt),*>)?),* $(,)?) => {$({
        let (name, id, ours) = generate::<ours::$ty $(<$($arg),*>)?>();
        let (their_name, their_id, theirs) = generate::<theirs::$ty $(<$($arg),*>)?>();
        assert_eq!(name, their_name, "schema_name of {}", stringify!($ty));
        assert_eq!(
            id.replace("::ours::", "::"),
            their_id.replace("::theirs::", "::"),
            "schema_id of {}",
            stringify!($ty)
        );
        assert_eq!(ours, theirs, "schema of {}", stringify!($ty));
    })*};
}

#[test]
fn the_derive_gives_schemars_schemas() {
    assert_same!(
        Add,
        Options,
        Action,
        Plain,
        Generic<String, 3>,
        Meters,
        Original,
        Pair<u32>,
        Lifetimes<'static>,
    );
}

#[test]
fn the_schema_carries_documentation_and_names() {
    let (name, _, schema) = generate::<ours::Add>();
    assert_eq!(name, "Add");
    assert_eq!(schema["title"], "Add");
    assert_eq!(
        schema["description"],
        "Two numbers to add.\n\nThe second line of the description."
    );
    assert_eq!(
        schema["properties"]["a"]["description"],
        "The first number."
    );
    assert_eq!(generate::<ours::Original>().0, "Renamed");
    assert_eq!(generate::<ours::Pair<u32>>().0, "Pair_of_uint32");
}
