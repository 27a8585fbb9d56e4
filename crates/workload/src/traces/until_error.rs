//! The stop at the first error that every streaming trace reader shares.
//!
//! A reader yields its records (or events) until the end of its trace or its first error,
//! which it yields, and then nothing more. Reading on past an error would go wrong: a binary
//! trace has lost its record boundaries, and a text trace would carry on past the line at
//! fault as if it were not there. So a replay stops at the error, which names the file, the
//! line (or byte offset) and the field.
//!
//! A reader implements [`ReadUntilError`] (how to read one item, and where it keeps its flag),
//! and its `Iterator::next` is [`ReadUntilError::next_until_error`].

use crate::input::InputError;

/// A trace read one item at a time, iterated until its end or its first error.
pub(crate) trait ReadUntilError {
    /// What one read gives: a record or an event.
    type Item;

    /// The reader's flag that it has stopped: false when it is opened, then set only by
    /// [`Self::next_until_error`].
    fn done(&mut self) -> &mut bool;

    /// Read the next item; `Ok(None)` at the end of the trace.
    fn read_next(&mut self) -> Result<Option<Self::Item>, InputError>;

    /// The next item as an iterator gives it: each item read, then the end or the first
    /// error, then `None` from then on without reading again.
    fn next_until_error(&mut self) -> Option<Result<Self::Item, InputError>> {
        if *self.done() {
            return None;
        }
        let next = self.read_next().transpose();
        if !matches!(next, Some(Ok(_))) {
            *self.done() = true;
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `steps` in turn (then the end), counting how often it is read.
    struct Scripted {
        steps: Vec<Result<Option<u32>, InputError>>,
        reads: usize,
        done: bool,
    }

    impl Scripted {
        fn new(steps: Vec<Result<Option<u32>, InputError>>) -> Scripted {
            Scripted {
                steps,
                reads: 0,
                done: false,
            }
        }

        fn next(&mut self) -> Option<Result<u32, InputError>> {
            self.next_until_error()
        }
    }

    impl ReadUntilError for Scripted {
        type Item = u32;

        fn done(&mut self) -> &mut bool {
            &mut self.done
        }

        fn read_next(&mut self) -> Result<Option<u32>, InputError> {
            self.reads += 1;
            self.steps.get(self.reads - 1).cloned().unwrap_or(Ok(None))
        }
    }

    fn bad(line: usize) -> InputError {
        InputError::at_line("t", line, "sector", "cannot parse \"x\"")
    }

    #[test]
    fn items_then_the_first_error_then_nothing_without_reading_again() {
        let mut r = Scripted::new(vec![Ok(Some(1)), Ok(Some(2)), Err(bad(3)), Ok(Some(4))]);
        assert_eq!(r.next(), Some(Ok(1)));
        assert_eq!(r.next(), Some(Ok(2)));
        assert_eq!(r.next(), Some(Err(bad(3))), "the error as read");
        assert_eq!(r.next(), None, "the record after the error is not given");
        assert_eq!(r.next(), None);
        assert_eq!(r.reads, 3, "not read again after the error");
    }

    #[test]
    fn the_end_is_final_even_if_the_reader_would_give_more() {
        let mut r = Scripted::new(vec![Ok(Some(7)), Ok(None), Ok(Some(8))]);
        assert_eq!(r.next(), Some(Ok(7)));
        assert_eq!(r.next(), None);
        assert_eq!(r.next(), None);
        assert_eq!(r.reads, 2, "not read again after the end");
    }

    #[test]
    fn an_error_first_is_given_once() {
        let mut r = Scripted::new(vec![Err(bad(1))]);
        assert_eq!(r.next(), Some(Err(bad(1))));
        assert_eq!(r.next(), None);
        assert_eq!(r.reads, 1);
    }
}
