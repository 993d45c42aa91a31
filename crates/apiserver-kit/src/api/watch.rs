//! Watch streams: newline-delimited JSON `WatchEvent` frames over a streamed response, one frame
//! per event, flushed as written.
//!
//! - Without a resourceVersion (or `0`): synthetic `ADDED` events for the current objects, then
//!   live events. From resourceVersion `N`: every event after `N`, replayed from the history; when
//!   `N` is older than the history, one `ERROR` event carrying a 410 `Expired` Status, so the
//!   client re-lists.
//! - `sendInitialEvents=true` (streaming lists): initial `ADDED` events, then a `BOOKMARK`
//!   annotated `k8s.io/initial-events-end: "true"`.
//! - `allowWatchBookmarks=true`: periodic `BOOKMARK`s whose resourceVersion is never older than an
//!   event already sent and never newer than one still to come.
//! - Selectors apply to both sides of a change: an object that starts matching arrives as
//!   `ADDED`, one that stops matching as `DELETED`.
//! - `timeoutSeconds`, or the server's minimum request timeout with up to 100% jitter, ends the
//!   stream cleanly.
//! - Shutdown ends the stream cleanly too, after the events already committed for this watcher
//!   (the server stops watches only once no write is in flight, so none is left out).
//!
//! The plain JSON frame of each event is encoded once and shared by every watcher. A watcher that
//! stops reading holds at most its bounded subscription buffer; beyond it the store drops the
//! subscription and the stream ends, so the client re-watches from its last resourceVersion.

use super::negotiate::{Representation, Target, partial_metadata_in};
use super::query::{ListOptions, Query};
use super::registry::{Registry, WatchSettings};
use super::table;
use crate::machinery::error::{Error, Result};
use crate::machinery::resource::ApiResource;
use crate::machinery::strategy::Strategy;
use crate::machinery::version::Served;
use crate::metrics::Metrics;
use crate::store::buffer::Empty;
use crate::store::{CloseReason, Closing, Event, EventType, Stored, Subscription, WatchFrom};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::core::TypeMeta;
use kube::core::watch::{Bookmark, BookmarkMeta};
use prometheus_client::metrics::counter::Counter;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::time::Instant;

/// The annotation of the bookmark that ends the initial events of a streaming list.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

#[derive(Serialize)]
struct Frame<'a, T: Serialize> {
    #[serde(rename = "type")]
    kind: &'static str,
    object: &'a T,
}

fn frame<T: Serialize>(kind: &'static str, object: &T) -> Result<Bytes> {
    let mut out =
        crate::machinery::json::to_vec(&Frame { kind, object }).map_err(|e| Error::Internal(e.to_string()))?;
    out.push(b'\n');
    Ok(Bytes::from(out))
}

/// The frame of a stored object: what [`frame`] writes, around the object's encoding (an
/// event's frame is itself made once and shared by every watcher).
fn stored_frame<K: ApiResource>(kind: &'static str, object: &Stored<K>) -> Bytes {
    let mut out = Vec::with_capacity(object.json_len() + kind.len() + 24);
    out.extend_from_slice(br#"{"type":""#);
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(br#"","object":"#);
    object.write_json(&mut out);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

fn type_name(kind: EventType) -> &'static str {
    match kind {
        EventType::Added => "ADDED",
        EventType::Modified => "MODIFIED",
        EventType::Deleted => "DELETED",
    }
}

/// Encodes the frames of one watch of `K` at version `V` in its representation.
struct Encoder<K: Strategy, V: Served<K>> {
    representation: Representation,
    include: table::IncludeObject,
    /// Table column definitions go in the first table frame only.
    columns_sent: bool,
    _kind: std::marker::PhantomData<(K, V)>,
}

impl<K: Strategy, V: Served<K>> Encoder<K, V> {
    fn object(&mut self, kind: &'static str, object: &Arc<Stored<K>>) -> Result<Bytes> {
        let object = V::stored_from_hub(object)?;
        match self.representation {
            Representation::Object => Ok(stored_frame(kind, &object)),
            Representation::Metadata(version) => frame(kind, &partial_metadata_in(&object.metadata()?, version)),
            Representation::Table(version) => {
                let metadata =
                    ListMeta { resource_version: Some(object.resource_version().to_string()), ..Default::default() };
                let mut t = table::render(
                    std::iter::once(object.as_ref()),
                    metadata,
                    self.include,
                    version,
                    k8s_openapi::jiff::Timestamp::now(),
                )?;
                if self.columns_sent {
                    t.drop_column_definitions();
                }
                self.columns_sent = true;
                frame(kind, &t)
            }
        }
    }

    /// The frame of `event` as its own type; the plain JSON frame is cached on the event, at
    /// the stored version and at one other, so each is converted and encoded once.
    fn event(&mut self, event: &Event<K>) -> Result<Bytes> {
        let kind = type_name(event.kind);
        if self.representation != Representation::Object {
            return self.object(kind, &event.object);
        }
        let version = std::any::TypeId::of::<V>();
        if version == std::any::TypeId::of::<K>() {
            if let Some(cached) = event.frame.get() {
                return Ok(cached.clone());
            }
            let encoded = stored_frame(kind, &event.object);
            return Ok(event.frame.get_or_init(|| encoded).clone());
        }
        if let Some((at, cached)) = event.served_frame.get()
            && *at == version
        {
            return Ok(cached.clone());
        }
        let encoded = stored_frame(kind, V::stored_from_hub(&event.object)?.as_ref());
        // The first version to get here keeps the slot; a third one encodes each time.
        let _ = event.served_frame.set((version, encoded.clone()));
        Ok(encoded)
    }

    fn bookmark(&mut self, revision: u64, initial_events_end: bool) -> Result<Bytes> {
        let types = match self.representation {
            Representation::Metadata(v) => {
                TypeMeta { api_version: v.api_version().into(), kind: "PartialObjectMetadata".into() }
            }
            Representation::Object | Representation::Table(_) => {
                TypeMeta { api_version: V::api_version(&()).into(), kind: V::info().kind.into() }
            }
        };
        let mut annotations = BTreeMap::new();
        if initial_events_end {
            annotations.insert(INITIAL_EVENTS_END.to_string(), "true".to_string());
        }
        let bookmark =
            Bookmark { types, metadata: BookmarkMeta { resource_version: revision.to_string(), annotations } };
        let Representation::Table(version) = self.representation else { return frame("BOOKMARK", &bookmark) };
        // A bookmark's object made a Table with the resource's columns, as any event's object.
        let object = serde_json::to_value(&bookmark).map_err(|e| Error::Internal(format!("a bookmark: {e}")))?;
        let mut t = table::bookmark::<V>(&object, initial_events_end, self.include, version);
        if self.columns_sent {
            t.drop_column_definitions();
        }
        self.columns_sent = true;
        frame("BOOKMARK", &t)
    }
}

fn error_frame(err: &Error) -> Bytes {
    frame("ERROR", &err.to_status()).unwrap_or_default()
}

/// What a watcher with selectors sees of an event: its own type, a transition, or nothing.
fn visible<K: ApiResource>(event: &Event<K>, selects: &(dyn Fn(&Stored<K>) -> bool + Sync)) -> Option<&'static str> {
    let now = selects(event.object.as_ref());
    match event.kind {
        EventType::Added => now.then_some("ADDED"),
        EventType::Deleted => now.then_some("DELETED"),
        EventType::Modified => {
            let before = event.previous.as_deref().is_some_and(selects);
            match (before, now) {
                (true, true) => Some("MODIFIED"),
                (false, true) => Some("ADDED"),
                (true, false) => Some("DELETED"),
                (false, false) => None,
            }
        }
    }
}

/// `previous`, the object before `event`, stamped with the event's revision.
fn stamped_before<K: ApiResource>(previous: &Stored<K>, event: &Event<K>) -> Result<Arc<Stored<K>>> {
    crate::store::stamp(previous.decode()?, event.revision)
}

/// The watch's end: `timeoutSeconds`, or the minimum request timeout with up to 100% jitter.
fn deadline(options: &ListOptions, min_request_timeout: std::time::Duration) -> Instant {
    let timeout = match options.timeout_seconds {
        Some(seconds) => std::time::Duration::from_secs(seconds),
        None => {
            use rand::Rng;
            min_request_timeout.mul_f64(1.0 + rand::rng().random::<f64>())
        }
    };
    // A `timeoutSeconds` near i64::MAX ends past what an `Instant` can hold: such a watch ends
    // when the far future does (tokio's own choice: 30 years).
    let now = Instant::now();
    now.checked_add(timeout).unwrap_or_else(|| now + FAR_FUTURE)
}

/// The end of a watch whose `timeoutSeconds` lies past what an `Instant` holds.
const FAR_FUTURE: std::time::Duration = std::time::Duration::from_secs(30 * 365 * 86_400);

/// A watch's body: its frames, produced as the client reads them.
type Frames =
    std::pin::Pin<Box<dyn futures::Stream<Item = std::result::Result<Bytes, std::convert::Infallible>> + Send>>;

/// How a watch's answer is written: its representation, and whether it is gzipped.
#[derive(Clone, Copy, Debug)]
pub struct Writing {
    /// The representation negotiated.
    pub representation: Representation,
    /// Whether the client's `Accept-Encoding` names gzip.
    pub accepts_gzip: bool,
}

/// Serves a watch of `namespace` (or all namespaces).
pub async fn serve<K: Strategy, V: Served<K>>(
    registry: Arc<Registry<K>>,
    namespace: Option<String>,
    options: ListOptions,
    writing: Writing,
    query: &Query,
) -> Result<Response> {
    let representation = writing.representation;
    // WatchListCompression (kube-apiserver 1.37, beta, on by default): a watch-list's stream is
    // gzipped for a client that accepts gzip; other watches go as they are.
    let gzip = writing.accepts_gzip && options.send_initial_events == Some(true) && options.allow_watch_bookmarks;
    let include = query.include_object()?;
    let settings = registry.watch_settings().clone();
    let rv = options.resource_version.filter(|rv| *rv != 0);
    let send_initial = options.send_initial_events.unwrap_or(rv.is_none());
    tracing::debug!(resource = K::info().plural, ?namespace, ?rv, send_initial, "watch starts");
    let deadline = deadline(&options, settings.min_request_timeout);
    if let Some(rv) = rv {
        // A watch that ends before the store reaches its resourceVersion ends without events,
        // as the kube-apiserver's does; one that would outlast the wait gets its 504.
        match tokio::time::timeout_at(deadline, registry.wait_for_revision(rv)).await {
            Ok(reached) => reached?,
            Err(_) => return Ok(watch_response(Box::pin(futures::stream::empty()), representation, gzip)),
        }
    }
    let from = match rv {
        Some(rv) if !send_initial => WatchFrom::After(rv),
        _ => WatchFrom::Now,
    };
    let encoder = Encoder::<K, V> { representation, include, columns_sent: false, _kind: std::marker::PhantomData };
    let frames: Frames = match registry.subscribe(namespace.as_deref(), from).await {
        // An expired watch is a 200 with one ERROR event, so clients re-list.
        Err(err @ Error::Expired(_)) => Box::pin(futures::stream::once(std::future::ready(Ok(error_frame(&err))))),
        Err(err) => return Err(err),
        Ok(subscription) => {
            let plan = Plan {
                send_initial,
                // As the cacher's `isInitialEventsEndBookmarkRequired`: only to a client that
                // takes bookmarks.
                announce_end: options.send_initial_events == Some(true) && options.allow_watch_bookmarks,
                bookmarks: options.allow_watch_bookmarks,
            };
            let sent = settings.metrics.watch_events.get_or_create(&Metrics::resource(K::info().plural)).clone();
            let selects = move |o: &Stored<K>| Registry::<K>::selects(&options, o);
            let outbox = Outbox { encoder, selects, deadline, last_sent: subscription.revision, sent };
            Box::pin(UntilClientLeaves { frames: Box::pin(frames(outbox, subscription, settings, plan)), ended: false })
        }
    };
    Ok(watch_response(frames, representation, gzip))
}

/// The streaming response carrying a watch's frames, gzipped when `gzip`.
fn watch_response(frames: Frames, representation: Representation, gzip: bool) -> Response {
    let frames = if gzip { gzipped(frames) } else { frames };
    let mut response = Response::new(Body::from_stream(frames));
    *response.status_mut() = StatusCode::OK;
    if let Ok(v) = HeaderValue::from_str(&representation.content_type(Target::Watch)) {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    if gzip {
        super::compression::mark_gzipped(response.headers_mut());
    }
    // No Cache-Control, as for the other answers of the API: the kube-apiserver in front sets
    // `no-cache, private` on every answer it proxies, and adds, not replaces, the backend's
    // (the conformance suite saw `no-cache, private, no-cache, private`).
    response
}

/// `frames` gzipped as the kube-apiserver's `perFlushGzipWriter` writes a watch: the frames
/// ready at once (those it writes before it flushes) make one gzip member, complete and sync
/// flushed ([`super::compression::gzip_member`]), so the client reads each batch as it comes.
fn gzipped(frames: Frames) -> Frames {
    use futures::StreamExt;
    Box::pin(frames.ready_chunks(BATCH).map(|batch| {
        let plain: Vec<u8> =
            batch.into_iter().flat_map(|frame| frame.map(|b| b.to_vec()).unwrap_or_default()).collect();
        // Writing into memory cannot fail.
        Ok(Bytes::from(super::compression::gzip_member(&plain).unwrap_or_default()))
    }))
}

/// At most this many frames ready at once make one gzip member.
const BATCH: usize = 1024;

/// What a watch sends besides the events: which the request asked for.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// ADDED events for every selected object first.
    send_initial: bool,
    /// A bookmark marking the end of the initial events (`sendInitialEvents=true`).
    announce_end: bool,
    /// Periodic bookmarks (`allowWatchBookmarks=true`).
    bookmarks: bool,
}

/// The encoding side of one watch: how frames are encoded, which objects the watcher sees, until
/// when, and what it was sent.
struct Outbox<K: Strategy, V: Served<K>, F> {
    encoder: Encoder<K, V>,
    /// The label and field selectors.
    selects: F,
    deadline: Instant,
    /// The revision of the newest event sent.
    last_sent: u64,
    /// `apiserver_watch_events` of this resource.
    sent: Counter,
}

/// What to do with one object or event.
enum Step {
    /// Send this frame.
    Send(Bytes),
    /// The watcher does not see it.
    Skip,
    /// End the stream (an encoding error, or the watch's time is up).
    End,
}

impl<K: Strategy, V: Served<K>, F: Fn(&Stored<K>) -> bool + Sync> Outbox<K, V, F> {
    /// The frame of `event`, if the watcher sees it, counted as sent.
    fn event(&mut self, event: &Event<K>) -> Step {
        let Some(kind) = visible(event, &self.selects) else { return Step::Skip };
        let encoded = if kind == type_name(event.kind) {
            self.encoder.event(event)
        } else if let ("DELETED", Some(Ok(left))) = (kind, event.previous.as_ref().map(|p| stamped_before(p, event))) {
            // An object leaving the selection is sent as the watcher last saw it, at the
            // change's revision, as the kube-apiserver's watch cache sends it.
            self.encoder.object(kind, &left)
        } else {
            self.encoder.object(kind, &event.object)
        };
        self.last_sent = self.last_sent.max(event.revision);
        self.counted(encoded)
    }

    /// The initial `ADDED` frame of `object`, if the watcher sees it; an unfinished initial
    /// list at shutdown ends the stream (the client lists again elsewhere).
    fn initial(&mut self, object: &Arc<Stored<K>>, stopping: &tokio_util::sync::CancellationToken) -> Step {
        if !(self.selects)(object) {
            return Step::Skip;
        }
        if stopping.is_cancelled() {
            return Step::End;
        }
        let encoded = self.encoder.object("ADDED", object);
        self.counted(encoded)
    }

    /// `encoded`, counted as sent, unless it failed or the watch's time is up.
    fn counted(&self, encoded: Result<Bytes>) -> Step {
        match encoded {
            Ok(frame) if Instant::now() < self.deadline => {
                self.sent.inc();
                Step::Send(frame)
            }
            _ => Step::End,
        }
    }

    /// The frames of every event already buffered, and whether the stream goes on after them:
    /// a closed buffer means the store dropped the watcher, so events after these are missing.
    fn buffered(&mut self, subscription: &mut Subscription<K>) -> (Vec<Bytes>, bool) {
        let mut frames = Vec::new();
        loop {
            match subscription.receiver.try_recv() {
                Ok(event) => match self.event(&event) {
                    Step::Send(frame) => frames.push(frame),
                    Step::Skip => {}
                    Step::End => return (frames, false),
                },
                Err(Empty::Now) => return (frames, true),
                Err(Empty::Closed) => {
                    closed_by_store(&subscription.closing, self.last_sent);
                    return (frames, false);
                }
            }
        }
    }
}

/// What a waiting watch wakes up for.
enum Wake<K> {
    Event(Option<Arc<Event<K>>>),
    Bookmark,
    Timeout,
    Stopping,
}

/// A watch's frames, produced as the client reads them, until the deadline, the client leaves
/// (the body is dropped), the store drops the watcher, or the server shuts down (after the
/// events already buffered). The frames are written straight to the connection: a watch holds
/// no buffer of its own and no task, only its subscription.
fn frames<K: Strategy, V: Served<K>, F: Fn(&Stored<K>) -> bool + Send + Sync + 'static>(
    mut out: Outbox<K, V, F>,
    mut subscription: Subscription<K>,
    settings: WatchSettings,
    plan: Plan,
) -> impl futures::Stream<Item = std::result::Result<Bytes, std::convert::Infallible>> + Send {
    async_stream::stream! {
        let _open = OpenWatch::start(&settings.metrics, K::info().plural);
        let stopping = settings.stopping.clone();
        let initial = if plan.send_initial { std::mem::take(&mut subscription.snapshot) } else { Vec::new() };
        for step in initial.iter().map(|object| out.initial(object, &stopping)) {
            match step {
                Step::Send(frame) => yield Ok(frame),
                Step::Skip => {}
                Step::End => return,
            }
        }
        // The snapshot's pointers go now, not with the watch.
        drop(initial);
        if plan.announce_end {
            let Ok(frame) = out.encoder.bookmark(subscription.revision, true) else { return };
            yield Ok(frame);
        }
        let mut ticker = tokio::time::interval_at(Instant::now() + settings.bookmark_interval, settings.bookmark_interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut replay = std::mem::take(&mut subscription.replay).into_iter();
        loop {
            let wake = match replay.next() {
                Some(event) => Wake::Event(Some(event)),
                None => tokio::select! {
                    event = subscription.receiver.recv() => Wake::Event(event),
                    _ = ticker.tick(), if plan.bookmarks => Wake::Bookmark,
                    () = tokio::time::sleep_until(out.deadline) => Wake::Timeout,
                    () = stopping.cancelled() => Wake::Stopping,
                },
            };
            match wake {
                Wake::Event(Some(event)) => match out.event(&event) {
                    Step::Send(frame) => yield Ok(frame),
                    Step::Skip => {}
                    Step::End => return,
                },
                Wake::Event(None) => {
                    // The store dropped us; the client re-watches.
                    return closed_by_store(&subscription.closing, out.last_sent);
                }
                Wake::Timeout => return tracing::debug!(out.last_sent, "watch ends: timeout"),
                Wake::Bookmark | Wake::Stopping => {
                    // Every event up to the subscription's progress is buffered: those go first,
                    // then the bookmark (never past a missing event), or the end at shutdown.
                    let revision = subscription.progress.get();
                    let (frames, going_on) = out.buffered(&mut subscription);
                    for frame in frames {
                        yield Ok(frame);
                    }
                    if !going_on {
                        return;
                    }
                    if matches!(wake, Wake::Stopping) {
                        return tracing::debug!(out.last_sent, "watch ends: the server is shutting down");
                    }
                    let Ok(frame) = out.encoder.bookmark(revision.max(out.last_sent), false) else { return };
                    yield Ok(frame);
                }
            }
        }
    }
}

/// A watch's frames, telling when the client left first: the body dropped before the frames
/// ended (each way they end on their own is logged where it happens).
struct UntilClientLeaves {
    frames: Frames,
    ended: bool,
}

impl futures::Stream for UntilClientLeaves {
    type Item = std::result::Result<Bytes, std::convert::Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = self.frames.as_mut().poll_next(cx);
        if let std::task::Poll::Ready(None) = next {
            self.ended = true;
        }
        next
    }
}

impl Drop for UntilClientLeaves {
    fn drop(&mut self) {
        if !self.ended {
            tracing::debug!("watch ends: the client went away");
        }
    }
}

/// Logs why the store closed a watcher's buffer (the store counts the watchers it dropped).
fn closed_by_store(closing: &Closing, last_sent: u64) {
    match closing.reason() {
        Some(CloseReason::FellBehind) => tracing::debug!(last_sent, "watch ends: the watcher fell behind"),
        _ => tracing::debug!(last_sent, "watch ends: the storage's watch ended"),
    }
}

/// An open watch, counted in `apiserver_longrunning_requests` for as long as it lives.
struct OpenWatch(prometheus_client::metrics::gauge::Gauge);

impl OpenWatch {
    fn start(metrics: &Metrics, resource: &'static str) -> Self {
        let gauge = metrics.watches.get_or_create(&Metrics::resource(resource)).clone();
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::registry::{WatchSettings, WriteContext};
    use crate::machinery::testing::{Widget, WidgetSpec, WidgetV1beta1, widget};
    use crate::store::{Revision, memory::MemoryStore};
    use http_body_util::BodyExt;

    /// A registry with `settings` and a watch of its namespace `shop` with `query`, not yet read.
    async fn watch_shop(settings: WatchSettings, query: &str) -> (Arc<Registry<Widget>>, Response) {
        let store = MemoryStore::<Widget>::new(Arc::new(Revision::default()), 1_000);
        let registry = Arc::new(Registry::new(Arc::new(store), settings));
        let query = Query::parse(Some(query));
        let options = ListOptions::parse(&query, &[]).unwrap();
        let response = serve::<Widget, Widget>(
            registry.clone(),
            Some("shop".into()),
            options,
            Writing { representation: Representation::Object, accepts_gzip: false },
            &query,
        )
        .await
        .unwrap();
        (registry, response)
    }

    /// Creates widgets `l<i>` in `shop` for every `i` of `range`.
    async fn create(registry: &Registry<Widget>, range: std::ops::Range<usize>) {
        for i in range {
            let mut object = widget("shop", &format!("l{i}"), 1.0);
            object.metadata.namespace = None;
            registry.create("shop", object, &WriteContext::default()).await.unwrap();
        }
    }

    #[test]
    fn a_stored_objects_frame_is_byte_for_byte_the_frame_serde_writes() {
        let mut object = Widget::new("dolly", WidgetSpec { size: 2.5, color: Some("a \"b\"".into()) });
        object.metadata.resource_version = Some("7".into());
        for kind in ["ADDED", "MODIFIED", "DELETED"] {
            let stored = Stored::new(object.clone()).unwrap();
            assert_eq!(stored_frame(kind, &stored), frame(kind, &object).unwrap());
        }
    }

    /// An encoder of plain JSON frames at version `V` of objects stored as `K`.
    fn encoder<K: Strategy, V: Served<K>>() -> Encoder<K, V> {
        Encoder {
            representation: Representation::Object,
            include: table::IncludeObject::default(),
            columns_sent: false,
            _kind: std::marker::PhantomData,
        }
    }

    #[test]
    fn an_event_is_converted_and_encoded_once_per_version_not_once_per_watcher() {
        let mut object = Widget::new("dolly", WidgetSpec { size: 2.5, color: Some("white".into()) });
        object.metadata.resource_version = Some("7".into());
        let object = Arc::new(Stored::new(object).unwrap());
        let event = Event {
            revision: 7,
            kind: EventType::Added,
            object,
            previous: None,
            frame: Default::default(),
            served_frame: Default::default(),
        };
        let stored = [encoder::<Widget, Widget>(), encoder::<Widget, Widget>()].map(|mut e| e.event(&event).unwrap());
        let converted = [encoder::<Widget, WidgetV1beta1>(), encoder::<Widget, WidgetV1beta1>()]
            .map(|mut e| e.event(&event).unwrap());
        assert_eq!(stored[0].as_ptr(), stored[1].as_ptr(), "one frame at the stored version, shared");
        assert_eq!(converted[0].as_ptr(), converted[1].as_ptr(), "one frame at v1beta1, shared");
        let frame: serde_json::Value = serde_json::from_slice(&converted[0]).unwrap();
        assert_eq!(frame["object"]["apiVersion"], "test.example.com/v1beta1");
        assert_eq!(frame["object"]["spec"]["colour"], "white");
    }

    /// Every frame of the watch, once its stream has ended.
    async fn frames(response: Response) -> Vec<serde_json::Value> {
        let body = tokio::time::timeout(std::time::Duration::from_secs(5), response.into_body().collect())
            .await
            .expect("the stream ends")
            .unwrap()
            .to_bytes();
        body.split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect()
    }

    // The clock is tokio's, paused: it moves only when the test moves it (or every task waits),
    // so the bookmark tick falls due exactly where the test says, never by a real sleep's luck.
    #[tokio::test(start_paused = true)]
    async fn a_watcher_dropped_for_falling_behind_gets_no_bookmark_past_its_last_event() {
        // Found by tests/soak: a bookmark sent after the store dropped the watcher carried
        // the store's revision, and a client resuming from it skipped every event in between.
        // The watch picks at random among what is ready (its tick, its subscription), so the
        // scene is played 16 times: the tick is taken first in one at least but once in 65,536.
        for _ in 0..16 {
            let frames = dropped_while_its_tick_falls_due().await;
            let mut last_event = 0;
            for event in &frames {
                let rv: u64 = event["object"]["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                if event["type"] == "BOOKMARK" {
                    assert!(rv <= last_event, "a bookmark at {rv} after the last event at {last_event}: {event}");
                } else {
                    assert_eq!(rv, last_event + 1, "events in order without a gap");
                    last_event = rv;
                }
            }
            assert!(last_event >= 1, "the watcher sent what it had before it was dropped");
            assert!(last_event < 100, "the watcher was dropped, so it cannot have seen every event");
        }
    }

    /// The frames of a watch whose client reads one event, then stops reading while the
    /// subscription overflows (the store drops the watcher) and the bookmark tick falls due.
    async fn dropped_while_its_tick_falls_due() -> Vec<serde_json::Value> {
        let interval = std::time::Duration::from_millis(20);
        let settings = WatchSettings { buffer: 40, bookmark_interval: interval, ..WatchSettings::default() };
        // Not a watch list (the default from no resourceVersion): its first frame is an event.
        let query = "watch=true&allowWatchBookmarks=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan";
        let (registry, response) = watch_shop(settings, query).await;
        let mut body = response.into_body();
        create(&registry, 0..30).await;
        // The first read starts the watch's frames, and its bookmark ticker.
        let first = body.frame().await.expect("a frame").unwrap().into_data().unwrap();
        create(&registry, 30..100).await;
        tokio::time::advance(3 * interval).await;
        let rest = tokio::time::timeout(std::time::Duration::from_secs(5), body.collect()).await;
        let rest = rest.expect("the stream ends").unwrap().to_bytes();
        let lines = [first, rest];
        let lines = lines.iter().flat_map(|b| b.split(|b| *b == b'\n')).filter(|l| !l.is_empty());
        lines.map(|line| serde_json::from_slice(line).unwrap()).collect()
    }

    #[tokio::test]
    async fn shutdown_sends_every_committed_event_before_ending_the_stream() {
        let settings = WatchSettings::default();
        let stopping = settings.stopping.clone();
        let (registry, response) = watch_shop(settings, "watch=true").await;
        // Far more events than the body's buffer: most still wait in the subscription when
        // shutdown comes, because nobody reads the body yet.
        create(&registry, 0..200).await;
        stopping.cancel();
        let names: Vec<String> = frames(response)
            .await
            .iter()
            .map(|event| event["object"]["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, (0..200).map(|i| format!("l{i}")).collect::<Vec<_>>());
    }
}
