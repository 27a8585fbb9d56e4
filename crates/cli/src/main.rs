//! The `elevator` command line.

fn main() {
    println!("elevator: not yet");
}
