//! One module per subcommand.

pub mod list;
pub mod sim;
