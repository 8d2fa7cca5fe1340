//! Small frame buffers kept for reuse by the thread that last held them.
//!
//! A frame is usually made on one worker thread (the caller or request task that
//! serializes it) and freed on another (the writer's, after writing it). With glibc's
//! allocator that free goes back to the arena of the thread that made the buffer,
//! under that arena's lock, once the freeing thread's small cache is full; with many
//! frames in flight both workers then contend for one lock on every frame. The writer
//! gives written frames back here instead, and the code that makes frames takes them
//! from here first: a buffer goes round between threads without the allocator.
//!
//! Each thread keeps at most [`KEPT`] buffers of at most [`MAX_CAPACITY`] bytes, so
//! this holds at most a few hundred KiB per thread, and nothing on a thread that never
//! writes frames.

use std::cell::RefCell;

/// Buffers kept per thread.
const KEPT: usize = 64;
/// Largest buffer kept: frames of calls and answers, not large results.
const MAX_CAPACITY: usize = 4096;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for at least `capacity` bytes: one this thread was given
/// back, if it has one.
pub(crate) fn buffer(capacity: usize) -> Vec<u8> {
    let spare = SPARE
        .try_with(|spare| spare.borrow_mut().pop())
        .ok()
        .flatten();
    match spare {
        Some(mut buf) => {
            buf.reserve(capacity);
            buf
        }
        None => Vec::with_capacity(capacity),
    }
}

/// Give back a frame's buffer that is done with; one that is too large, or one more
/// than this thread keeps, is freed.
pub(crate) fn give_back(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > MAX_CAPACITY {
        return;
    }
    buf.clear();
    // (During thread teardown the cache is gone, and the buffer is simply freed.)
    let _ = SPARE.try_with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < KEPT {
            spare.push(buf);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_handed_out_again_empty() {
        let mut frame = buffer(100);
        frame.extend_from_slice(b"{\"jsonrpc\":\"2.0\"}");
        let at = frame.as_ptr();
        give_back(frame);
        let again = buffer(10);
        assert_eq!(again.as_ptr(), at, "the same allocation comes back");
        assert!(again.is_empty());
        assert!(again.capacity() >= 100);
    }

    #[test]
    fn large_buffers_and_buffers_past_the_limit_are_freed() {
        give_back(Vec::with_capacity(MAX_CAPACITY + 1));
        for _ in 0..KEPT + 10 {
            give_back(Vec::with_capacity(64));
        }
        let kept = SPARE.with(|spare| spare.borrow().len());
        assert_eq!(kept, KEPT);
        assert!(SPARE.with(|spare| spare.borrow().iter().all(|b| b.capacity() <= MAX_CAPACITY)));
    }

    #[test]
    fn a_buffer_taken_has_the_room_asked_for() {
        give_back(Vec::with_capacity(16));
        let buf = buffer(1000);
        assert!(buf.capacity() >= 1000);
    }
}
