//! PyYAML 6's `yaml.safe_load`, ported to Rust, and an emitter whose text it reads back.

pub mod composer;
pub mod constructor;
pub mod emitter;
pub mod json;
pub mod parser;
pub mod pynum;
pub mod resolver;
pub mod scanner;
