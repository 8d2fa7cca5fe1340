//! Small frame buffers that go round between the tasks that queue frames and the writer.
//!
//! A frame is made on one worker thread (by the caller or request task that serializes
//! it) and written by the writer task, often on another. If the writer freed it there,
//! glibc's allocator would take the lock of the maker's arena for each frame, and with
//! many frames in flight both workers contend for that lock. So a small frame is copied
//! into a buffer from this pool before it is queued (its own buffer is freed where it
//! was made), and the writer gives the buffer back once it is written.
//!
//! The pool holds at most [`KEPT`] buffers of [`SLOT`] bytes each, and only as many as
//! frames were ever in the writer's queue at once: a session that sends one frame at a
//! time keeps one or two.

use std::sync::{Mutex, PoisonError};

/// Room in each pooled buffer: a frame up to this long is copied into one.
pub(crate) const SLOT: usize = 512;
/// Buffers kept, at most.
const KEPT: usize = 128;

/// Spare frame buffers, each of [`SLOT`] bytes.
#[derive(Debug, Default)]
pub(crate) struct FramePool {
    spare: Mutex<Vec<Vec<u8>>>,
}

impl FramePool {
    /// `frame` in a pooled buffer when it fits one; else `frame` itself.
    pub(crate) fn copy(&self, frame: Vec<u8>) -> Vec<u8> {
        if frame.len() > SLOT {
            return frame;
        }
        let spare = self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut buf = spare.unwrap_or_else(|| Vec::with_capacity(SLOT));
        buf.extend_from_slice(&frame);
        buf
    }

    /// Whether `buf` is one of the pool's buffers (any of [`SLOT`] bytes), which the
    /// writer keeps to give back; any other it frees once written.
    pub(crate) fn takes(buf: &Vec<u8>) -> bool {
        buf.capacity() == SLOT
    }

    /// Take back written frames: the pooled buffers among `written`, emptied, while
    /// the pool has room. `written` is left empty.
    pub(crate) fn give_back(&self, written: &mut Vec<Vec<u8>>) {
        if written.is_empty() {
            return;
        }
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        for mut buf in written.drain(..) {
            if FramePool::takes(&buf) && spare.len() < KEPT {
                buf.clear();
                spare.push(buf);
            }
        }
    }

    /// Buffers kept now.
    #[cfg(test)]
    pub(crate) fn spare(&self) -> usize {
        self.spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_frame_goes_round_in_one_buffer() {
        let pool = FramePool::default();
        let first = pool.copy(b"{\"jsonrpc\":\"2.0\"}".to_vec());
        assert_eq!(first, b"{\"jsonrpc\":\"2.0\"}");
        assert_eq!(first.capacity(), SLOT);
        let at = first.as_ptr();
        pool.give_back(&mut vec![first]);
        let second = pool.copy(b"{}".to_vec());
        assert_eq!(
            second.as_ptr(),
            at,
            "the written frame's buffer is used again"
        );
        assert_eq!(second, b"{}");
    }

    #[test]
    fn only_the_pools_own_buffers_are_taken_back() {
        let pool = FramePool::default();
        assert!(FramePool::takes(&pool.copy(b"{}".to_vec())));
        assert!(!FramePool::takes(&vec![b' '; SLOT + 1]));
        assert!(!FramePool::takes(&Vec::with_capacity(64)));
    }

    #[test]
    fn large_frames_and_other_buffers_are_not_kept() {
        let pool = FramePool::default();
        let large = vec![b' '; SLOT + 1];
        let at = large.as_ptr();
        let kept = pool.copy(large);
        assert_eq!(kept.as_ptr(), at, "a large frame is queued as it is");
        let mut written = vec![kept, Vec::with_capacity(64)];
        written.extend((0..KEPT + 10).map(|_| Vec::with_capacity(SLOT)));
        pool.give_back(&mut written);
        assert!(written.is_empty());
        assert_eq!(pool.spare(), KEPT);
        let spare = pool.spare.lock().unwrap();
        assert!(spare.iter().all(|b| b.capacity() == SLOT && b.is_empty()));
    }
}
