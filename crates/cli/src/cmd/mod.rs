//! One module per subcommand.

pub mod drive;
pub mod list;
pub mod run;
pub mod sim;
pub mod validate;
