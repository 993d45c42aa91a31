//! A client of etcd's KV and Watch services over the generated gRPC code ([`super::grpc`]):
//! one lazily connected, load-balanced channel to every endpoint, each request marked
//! "require leader", and small builders for the requests the store makes.

use super::grpc::etcdserverpb::{
    CompactionRequest, Compare, DeleteRangeRequest, PutRequest, RangeRequest, RangeResponse, RequestOp, TxnRequest,
    TxnResponse, WatchCreateRequest, WatchRequest, WatchResponse, compare, kv_client::KvClient, request_op,
    watch_client::WatchClient, watch_request,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// A cheap-to-clone client of one etcd cluster.
#[derive(Clone, Debug)]
pub struct EtcdClient {
    kv: KvClient<Transport>,
    watch: WatchClient<Transport>,
}

/// The largest etcd response accepted (etcd caps one object at 1.5 MiB by default; a list
/// chunk holds many).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

impl EtcdClient {
    /// A client over `channel` (which connects on first use).
    pub fn new(channel: Channel) -> Self {
        let kv =
            KvClient::with_interceptor(channel.clone(), RequireLeader).max_decoding_message_size(MAX_RESPONSE_BYTES);
        let watch = WatchClient::with_interceptor(channel, RequireLeader).max_decoding_message_size(MAX_RESPONSE_BYTES);
        Self { kv, watch }
    }

    /// The value of one key (none in the response when it does not exist), read now.
    pub async fn get(&self, key: impl Into<Vec<u8>>) -> Result<RangeResponse, Status> {
        self.range(RangeRequest { key: key.into(), ..Default::default() }).await
    }

    /// A range read.
    pub async fn range(&self, request: RangeRequest) -> Result<RangeResponse, Status> {
        Ok(self.kv.clone().range(request).await?.into_inner())
    }

    /// An atomic transaction: `success` when every comparison holds, else `failure`.
    pub async fn txn(
        &self,
        compare: Vec<Compare>,
        success: Vec<RequestOp>,
        failure: Vec<RequestOp>,
    ) -> Result<TxnResponse, Status> {
        Ok(self.kv.clone().txn(TxnRequest { compare, success, failure }).await?.into_inner())
    }

    /// Discards history before `revision`, waiting until it is gone from the disk too.
    pub async fn compact(&self, revision: i64) -> Result<(), Status> {
        self.kv.clone().compact(CompactionRequest { revision, physical: true }).await?;
        Ok(())
    }

    /// A watch created by `request`.
    pub async fn watch(&self, request: WatchCreateRequest) -> Result<WatchStream, Status> {
        // The request stream stays open as long as the watch: closing it would end the watch.
        let (requests, receiver) = mpsc::channel(1);
        let create = WatchRequest { request_union: Some(watch_request::RequestUnion::CreateRequest(request)) };
        requests.try_send(create).map_err(|_| Status::internal("the new watch's request channel is full"))?;
        let responses =
            self.watch.clone().watch(tokio_stream::wrappers::ReceiverStream::new(receiver)).await?.into_inner();
        Ok(WatchStream { _requests: requests, responses, _open: None })
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
