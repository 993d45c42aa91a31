//! A client of etcd's KV and Watch services over the generated gRPC code ([`super::grpc`]):
//! one lazily connected channel per endpoint, used in turn and passed over while its member
//! refuses connections, each request marked "require leader", reads asked again while etcd is
//! between leaders, and small builders for the requests the store makes.

use super::grpc::etcdserverpb::{
    CompactionRequest, Compare, DeleteRangeRequest, PutRequest, RangeRequest, RangeResponse, RequestOp, TxnRequest,
    TxnResponse, WatchCreateRequest, WatchRequest, WatchResponse, compare, kv_client::KvClient, request_op,
    watch_client::WatchClient, watch_request,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Status, Streaming};

/// The channel every request goes through.
type Transport = InterceptedService<Channel, RequireLeader>;

/// Marks every request "require leader": a member cut off from the quorum refuses it instead of
/// answering from data that may be stale (etcd's `hasleader` metadata, as etcdctl sends it).
#[derive(Clone, Copy, Debug)]
pub struct RequireLeader;

impl tonic::service::Interceptor for RequireLeader {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        request.metadata_mut().insert("hasleader", tonic::metadata::AsciiMetadataValue::from_static("true"));
        Ok(request)
    }
}

/// A cheap-to-clone client of one etcd cluster: a lazily connected channel per member, used in
/// turn. A request that could not even connect (the member is down) never reached etcd, so it
/// goes to the next member at once, and the failed member is passed over until
/// [`MEMBER_RETRY`] has gone by: with one member of three dead, no request fails. (tonic's
/// balanced channel would keep choosing the dead member, failing about a third of the requests:
/// hyperium/tonic issues 643 and 2839.)
#[derive(Clone, Debug)]
pub struct EtcdClient {
    members: Arc<[Member]>,
    /// Which member the next request starts with.
    next: Arc<AtomicUsize>,
}

/// One etcd member's channel, and until when it is passed over.
#[derive(Debug)]
struct Member {
    clients: parking_lot::RwLock<Clients>,
    down_until: parking_lot::Mutex<Option<Instant>>,
}

/// The services of one channel.
#[derive(Clone, Debug)]
struct Clients {
    kv: KvClient<Transport>,
    watch: WatchClient<Transport>,
}

impl Clients {
    fn new(channel: Channel) -> Self {
        let kv =
            KvClient::with_interceptor(channel.clone(), RequireLeader).max_decoding_message_size(MAX_RESPONSE_BYTES);
        let watch = WatchClient::with_interceptor(channel, RequireLeader).max_decoding_message_size(MAX_RESPONSE_BYTES);
        Self { kv, watch }
    }
}

/// How long a member that refused a connection is passed over (unless every member is).
pub const MEMBER_RETRY: Duration = Duration::from_secs(1);

/// How long a read is asked again while etcd answers that it is between leaders
/// ([`transient`]); an election takes about one election timeout (1 s by default).
pub const READ_RETRY: Duration = Duration::from_secs(3);

/// The largest etcd response accepted (etcd caps one object at 1.5 MiB by default; a list
/// chunk holds many).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

impl Member {
    fn new(channel: Channel) -> Self {
        Self { clients: parking_lot::RwLock::new(Clients::new(channel)), down_until: parking_lot::Mutex::new(None) }
    }

    fn kv(&self) -> KvClient<Transport> {
        self.clients.read().kv.clone()
    }

    fn watch(&self) -> WatchClient<Transport> {
        self.clients.read().watch.clone()
    }

    fn is_down(&self) -> bool {
        self.down_until.lock().is_some_and(|until| Instant::now() < until)
    }
}

/// Whether `status` says the request never reached etcd: the connection to the member could
/// not be made (its name resolves to no address, as a StatefulSet member's while its Pod is
/// gone; refused; not made in time), so sending it elsewhere cannot apply it twice.
pub fn never_sent(status: &Status) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(error) = cause {
        let text = error.to_string();
        let connect = text.starts_with("dns error")
            || text.contains("tcp connect error")
            || error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused);
        if connect {
            return true;
        }
        cause = error.source();
    }
    false
}

/// Whether `status` is etcd saying it could not serve the request just now ("etcdserver: leader
/// changed", "no leader", "request timed out"): a read may be asked again, as clientv3 asks
/// every read again on Unavailable; a write may have been applied, so it is not.
pub fn transient(status: &Status) -> bool {
    status.code() == tonic::Code::Unavailable && status.message().starts_with("etcdserver: ")
}

impl EtcdClient {
    /// A client of the members behind `channels` (each connects on first use).
    pub fn new(channels: Vec<Channel>) -> Self {
        Self { members: channels.into_iter().map(Member::new).collect(), next: Arc::new(AtomicUsize::new(0)) }
    }

    /// Sends the requests that follow through `channels` (one per member, in the same order):
    /// new connections, with the TLS settings they were made with. Requests and watches under
    /// way keep their connection until they end.
    pub fn replace_channels(&self, channels: Vec<Channel>) {
        for (member, channel) in self.members.iter().zip(channels) {
            *member.clients.write() = Clients::new(channel);
        }
    }

    /// Runs `call` on the members in turn, starting with the next one and with those not passed
    /// over, until one is reached: the first answer, or the last connection failure.
    async fn on_a_member<T, F, Fut>(&self, call: F) -> Result<T, Status>
    where
        F: Fn(&Member) -> Fut,
        Fut: std::future::Future<Output = Result<T, Status>>,
    {
        let count = self.members.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut order: Vec<&Member> = (0..count).map(|i| &self.members[(start + i) % count]).collect();
        order.sort_by_key(|m| m.is_down());
        let mut last = Status::unavailable("no etcd endpoint");
        for member in order {
            match call(member).await {
                Err(status) if never_sent(&status) => {
                    *member.down_until.lock() = Some(Instant::now() + MEMBER_RETRY);
                    last = status;
                }
                answer => return answer,
            }
        }
        Err(last)
    }

    /// The value of one key (none in the response when it does not exist), read now.
    pub async fn get(&self, key: impl Into<Vec<u8>>) -> Result<RangeResponse, Status> {
        self.range(RangeRequest { key: key.into(), ..Default::default() }).await
    }

    /// A range read, asked again (of the next member) for up to [`READ_RETRY`] while etcd is
    /// between leaders.
    pub async fn range(&self, request: RangeRequest) -> Result<RangeResponse, Status> {
        let deadline = Instant::now() + READ_RETRY;
        let mut pause = Duration::from_millis(25);
        loop {
            match self.range_once(request.clone()).await {
                Err(status) if transient(&status) && Instant::now() + pause < deadline => {
                    tracing::debug!(%status, ?pause, "etcd is between leaders; reading again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(400));
                }
                answer => return answer,
            }
        }
    }

    /// A range read asked once: etcd between leaders is an error at once (the health probe's).
    pub async fn range_once(&self, request: RangeRequest) -> Result<RangeResponse, Status> {
        self.on_a_member(|m| {
            let request = request.clone();
            let mut kv = m.kv();
            async move { Ok(kv.range(request).await?.into_inner()) }
        })
        .await
    }

    /// An atomic transaction: `success` when every comparison holds, else `failure`.
    pub async fn txn(
        &self,
        compare: Vec<Compare>,
        success: Vec<RequestOp>,
        failure: Vec<RequestOp>,
    ) -> Result<TxnResponse, Status> {
        let request = TxnRequest { compare, success, failure };
        self.on_a_member(|m| {
            let request = request.clone();
            let mut kv = m.kv();
            async move { Ok(kv.txn(request).await?.into_inner()) }
        })
        .await
    }

    /// Discards history before `revision`, waiting until it is gone from the disk too.
    pub async fn compact(&self, revision: i64) -> Result<(), Status> {
        self.on_a_member(|m| {
            let mut kv = m.kv();
            async move { kv.compact(CompactionRequest { revision, physical: true }).await.map(|_| ()) }
        })
        .await
    }

    /// A watch created by `request`.
    pub async fn watch(&self, request: WatchCreateRequest) -> Result<WatchStream, Status> {
        self.on_a_member(|m| {
            let (request, mut client) = (request.clone(), m.watch());
            async move {
                // The request stream stays open as long as the watch: closing it would end the watch.
                let (requests, receiver) = mpsc::channel(1);
                let create = WatchRequest { request_union: Some(watch_request::RequestUnion::CreateRequest(request)) };
                requests.try_send(create).map_err(|_| Status::internal("the new watch's request channel is full"))?;
                let responses = client.watch(tokio_stream::wrappers::ReceiverStream::new(receiver)).await?.into_inner();
                Ok(WatchStream { _requests: requests, responses, _open: None })
            }
        })
        .await
    }
}

/// The responses of one etcd watch.
pub struct WatchStream {
    /// Keeps the request half open: etcd ends the watch when it closes.
    _requests: mpsc::Sender<WatchRequest>,
    responses: Streaming<WatchResponse>,
    /// Counts this watch among its owner's open watches until dropped.
    _open: Option<OpenWatch>,
}

/// One open watch in a counter, removed when dropped.
struct OpenWatch(Arc<AtomicUsize>);

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl WatchStream {
    /// This watch, counted in `open` for as long as it lives.
    pub fn counted(mut self, open: Arc<AtomicUsize>) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        self._open = Some(OpenWatch(open));
        self
    }

    /// The next response; `None` when etcd ended the stream.
    pub async fn message(&mut self) -> Result<Option<WatchResponse>, Status> {
        self.responses.message().await
    }
}

/// The operation "read `key`" of a transaction.
pub fn get_op(key: impl Into<Vec<u8>>) -> RequestOp {
    let range = RangeRequest { key: key.into(), ..Default::default() };
    RequestOp { request: Some(request_op::Request::RequestRange(range)) }
}

/// The operation "write `value` at `key`" of a transaction.
pub fn put_op(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> RequestOp {
    let put = PutRequest { key: key.into(), value: value.into(), ..Default::default() };
    RequestOp { request: Some(request_op::Request::RequestPut(put)) }
}

/// The operation "delete `key`" of a transaction.
pub fn delete_op(key: impl Into<Vec<u8>>) -> RequestOp {
    let delete = DeleteRangeRequest { key: key.into(), ..Default::default() };
    RequestOp { request: Some(request_op::Request::RequestDeleteRange(delete)) }
}

/// The comparison "the version of `key` is `version`" (0: the key does not exist).
pub fn version_is(key: impl Into<Vec<u8>>, version: i64) -> Compare {
    equals(key.into(), compare::CompareTarget::Version, compare::TargetUnion::Version(version))
}

/// The comparison "`key` was created at `revision`" (0: the key does not exist).
pub fn create_revision_is(key: impl Into<Vec<u8>>, revision: i64) -> Compare {
    equals(key.into(), compare::CompareTarget::Create, compare::TargetUnion::CreateRevision(revision))
}

/// The comparison "`key` was last modified at `revision`".
pub fn mod_revision_is(key: impl Into<Vec<u8>>, revision: i64) -> Compare {
    equals(key.into(), compare::CompareTarget::Mod, compare::TargetUnion::ModRevision(revision))
}

fn equals(key: Vec<u8>, target: compare::CompareTarget, value: compare::TargetUnion) -> Compare {
    Compare {
        result: compare::CompareResult::Equal as i32,
        target: target as i32,
        key,
        range_end: Vec::new(),
        target_union: Some(value),
    }
}

/// The key-value pairs of the first read among a transaction's responses.
pub fn first_read(response: &TxnResponse) -> Option<&RangeResponse> {
    use super::grpc::etcdserverpb::response_op::Response;
    response.responses.iter().find_map(|op| match &op.response {
        Some(Response::ResponseRange(range)) => Some(range),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::{never_sent, transient};
    use std::io::{Error, ErrorKind};
    use tonic::Status;

    #[test]
    fn only_a_connection_that_could_not_be_made_counts_as_never_sent() {
        let refused = Status::from_error(Box::new(Error::from(ErrorKind::ConnectionRefused)));
        assert!(never_sent(&refused));
        let reset = Status::from_error(Box::new(Error::from(ErrorKind::ConnectionReset)));
        assert!(!never_sent(&reset), "a reset connection may have carried the request");
        assert!(!never_sent(&Status::unavailable("etcdserver: leader changed")));
        let unresolved = Status::from_error(Box::new(Resolving(Error::other("failed to lookup address information"))));
        assert!(never_sent(&unresolved), "a member whose name resolves to nothing was never asked");
    }

    /// What hyper-util's connector answers when a name does not resolve: "dns error", the
    /// resolver's error as its source.
    #[derive(Debug)]
    struct Resolving(Error);

    impl std::fmt::Display for Resolving {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("dns error")
        }
    }

    impl std::error::Error for Resolving {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn only_etcd_saying_it_is_between_leaders_makes_a_read_ask_again() {
        assert!(transient(&Status::unavailable("etcdserver: leader changed")));
        assert!(transient(&Status::unavailable("etcdserver: request timed out")));
        assert!(!transient(&Status::unavailable("error trying to connect: tcp connect error")), "etcd is down");
        assert!(!transient(&Status::resource_exhausted("etcdserver: mvcc: database space exceeded")));
        assert!(!transient(&Status::out_of_range("etcdserver: mvcc: required revision has been compacted")));
    }
}
