//! A subscriber's buffer of events: bounded, filled by the store without waiting, emptied by the
//! watch that serves it. Unlike a channel, the store can [`Feed::discard`] what a subscriber that
//! fell behind has not taken: a client that stopped reading (its socket full, its watch no longer
//! polled) then holds none of the events written since, only its connection. An idle buffer
//! holds no allocation but its shared state (about 130 bytes).
//!
//! No channel crate offers this: a tokio or async-channel sender cannot empty the queue, and a
//! flume receiver kept by the store for it has no `closed()` wait for the etcd forwarder.

use futures::task::AtomicWaker;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

/// Slots an empty buffer keeps after a burst (more are freed).
const ROOM_KEPT: usize = 16;

/// Why [`Feed::try_send`] did not buffer an item.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The buffer holds its capacity: the subscriber fell behind.
    Full,
    /// The subscriber is gone.
    Closed,
}

/// Why [`Buffered::try_recv`] returned no item.
#[derive(Debug, PartialEq, Eq)]
pub enum Empty {
    /// Nothing buffered yet.
    Now,
    /// Nothing buffered, and the store will add nothing more.
    Closed,
}

struct Queue<T> {
    items: VecDeque<T>,
    capacity: usize,
    feed_gone: bool,
}

struct Shared<T> {
    queue: Mutex<Queue<T>>,
    /// Set (under the queue's lock) when the subscriber goes; read without it, so the store's
    /// test of every subscriber of other namespaces at each event takes no lock.
    subscriber_gone: AtomicBool,
    /// Wakes the subscriber waiting in [`Buffered::recv`].
    subscriber: AtomicWaker,
    /// Wakes the store's forwarder waiting in [`Feed::closed`].
    feed: AtomicWaker,
}

/// A buffer of at most `capacity` items (at least 1): the store's end and the subscriber's.
pub fn buffer<T>(capacity: usize) -> (Feed<T>, Buffered<T>) {
    let queue = Queue { items: VecDeque::new(), capacity: capacity.max(1), feed_gone: false };
    let shared = Arc::new(Shared {
        queue: Mutex::new(queue),
        subscriber_gone: AtomicBool::new(false),
        subscriber: AtomicWaker::new(),
        feed: AtomicWaker::new(),
    });
    (Feed(shared.clone()), Buffered(shared))
}

/// The store's end: it adds events, and closes the buffer when dropped.
pub struct Feed<T>(Arc<Shared<T>>);

impl<T> Feed<T> {
    /// Buffers `item`, without waiting.
    pub fn try_send(&self, item: T) -> Result<(), Refused> {
        let mut queue = self.0.queue.lock();
        if self.0.subscriber_gone.load(Ordering::Acquire) {
            return Err(Refused::Closed);
        }
        if queue.items.len() >= queue.capacity {
            return Err(Refused::Full);
        }
        queue.items.push_back(item);
        drop(queue);
        self.0.subscriber.wake();
        Ok(())
    }

    /// Whether the subscriber is gone.
    pub fn is_closed(&self) -> bool {
        self.0.subscriber_gone.load(Ordering::Acquire)
    }

    /// Closes the buffer and drops what it holds: the subscriber fell behind and will re-watch
    /// from the last event it received, so what it did not take is of no use to it.
    pub fn discard(&self) {
        let dropped = {
            let mut queue = self.0.queue.lock();
            queue.feed_gone = true;
            std::mem::take(&mut queue.items)
        };
        drop(dropped);
        self.0.subscriber.wake();
    }

    /// Waits until the subscriber is gone.
    pub async fn closed(&self) {
        std::future::poll_fn(|cx| {
            self.0.feed.register(cx.waker());
            if self.is_closed() { Poll::Ready(()) } else { Poll::Pending }
        })
        .await
    }
}

impl<T> Drop for Feed<T> {
    fn drop(&mut self) {
        self.0.queue.lock().feed_gone = true;
        self.0.subscriber.wake();
    }
}

impl<T> std::fmt::Debug for Feed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed").finish_non_exhaustive()
    }
}

/// The subscriber's end: it takes events in order, and tells the store it is gone when dropped.
pub struct Buffered<T>(Arc<Shared<T>>);

impl<T> Buffered<T> {
    /// The next item, without waiting.
    pub fn try_recv(&mut self) -> Result<T, Empty> {
        let mut queue = self.0.queue.lock();
        match queue.items.pop_front() {
            Some(item) => {
                // A burst's room is given back once it is taken: an idle watcher holds none.
                if queue.items.is_empty() && queue.items.capacity() > ROOM_KEPT {
                    queue.items = VecDeque::new();
                }
                Ok(item)
            }
            None if queue.feed_gone => Err(Empty::Closed),
            None => Err(Empty::Now),
        }
    }

    /// The next item, once there is one; `None` once the buffer is closed and empty.
    /// Cancel-safe: an item is taken only when returned.
    pub async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match self.try_recv() {
            Ok(item) => return Poll::Ready(Some(item)),
            Err(Empty::Closed) => return Poll::Ready(None),
            Err(Empty::Now) => {}
        }
        self.0.subscriber.register(cx.waker());
        // An item or the close may have come between the first look and the registration.
        match self.try_recv() {
            Ok(item) => Poll::Ready(Some(item)),
            Err(Empty::Closed) => Poll::Ready(None),
            Err(Empty::Now) => Poll::Pending,
        }
    }
}

impl<T> Drop for Buffered<T> {
    fn drop(&mut self) {
        let dropped = {
            let mut queue = self.0.queue.lock();
            self.0.subscriber_gone.store(true, Ordering::Release);
            std::mem::take(&mut queue.items)
        };
        drop(dropped);
        self.0.feed.wake();
    }
}

impl<T> std::fmt::Debug for Buffered<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffered").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_order_until_the_feed_is_gone() {
        let (feed, mut buffered) = buffer(3);
        assert_eq!(buffered.try_recv(), Err(Empty::Now));
        for i in 0..3 {
            feed.try_send(i).unwrap();
        }
        assert_eq!(feed.try_send(3), Err(Refused::Full));
        assert_eq!(buffered.try_recv(), Ok(0));
        feed.try_send(3).unwrap();
        drop(feed);
        assert_eq!([buffered.try_recv(), buffered.try_recv(), buffered.try_recv()], [Ok(1), Ok(2), Ok(3)]);
        assert_eq!(buffered.try_recv(), Err(Empty::Closed));
    }

    #[test]
    fn the_room_of_a_burst_is_given_back_once_taken() {
        let (feed, mut buffered) = buffer(1_000);
        for i in 0..1_000 {
            feed.try_send(i).unwrap();
        }
        while buffered.try_recv().is_ok() {}
        assert!(feed.0.queue.lock().items.capacity() <= ROOM_KEPT);
    }

    #[test]
    fn a_discarded_buffer_drops_what_it_held_and_closes() {
        let item = Arc::new(());
        let (feed, mut buffered) = buffer(10);
        for _ in 0..10 {
            feed.try_send(item.clone()).unwrap();
        }
        assert_eq!(Arc::strong_count(&item), 11);
        feed.discard();
        assert_eq!(Arc::strong_count(&item), 1, "nothing held for a subscriber that fell behind");
        assert_eq!(buffered.try_recv(), Err(Empty::Closed));
    }

    #[test]
    fn a_subscriber_gone_closes_the_feed_and_drops_its_items() {
        let item = Arc::new(());
        let (feed, buffered) = buffer(4);
        feed.try_send(item.clone()).unwrap();
        assert!(!feed.is_closed());
        drop(buffered);
        assert!(feed.is_closed());
        assert_eq!(Arc::strong_count(&item), 1);
        assert_eq!(feed.try_send(item.clone()), Err(Refused::Closed));
    }

    #[tokio::test]
    async fn recv_waits_for_an_item_or_the_close_and_closed_for_the_subscriber() {
        let (feed, mut buffered) = buffer(1);
        let waiting = tokio::spawn(async move { (buffered.recv().await, buffered.recv().await, buffered) });
        tokio::task::yield_now().await;
        feed.try_send(7).unwrap();
        let forwarder = tokio::spawn(async move {
            // Send again once the first is taken, then wait for the subscriber to go.
            while feed.try_send(8) == Err(Refused::Full) {
                tokio::task::yield_now().await;
            }
            feed.closed().await;
        });
        let (first, second, buffered) = waiting.await.unwrap();
        assert_eq!((first, second), (Some(7), Some(8)));
        drop(buffered);
        forwarder.await.unwrap();
    }
}
