//! `farm-node-dns --listen ADDR [--zone ZONE]`: the cluster DNS of the tests' one-node cluster
//! (`scripts/node.sh`), what CoreDNS is to kubeadm and kind. It watches Services and Endpoints
//! with the kubeconfig of `KUBECONFIG` and answers A queries over UDP for the names of
//! [`lookup`]; the kubelet's `--cluster-dns` points Pods at it. It has no upstream: the node's
//! network namespace has no route out, so every name outside the zone is NXDOMAIN.

mod lookup;

use futures::StreamExt;
use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::{Name, RData, Record, RecordType, rdata};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use lookup::{Answer, Cluster};
use std::str::FromStr;

const USAGE: &str = "farm-node-dns --listen ADDR [--zone ZONE]";

/// Seconds a client may cache an answer: Pods come and go in seconds on the node.
const TTL: u32 = 5;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (listen, zone) = arguments()?;
    let client = kube::Client::try_default().await?;
    let (services, services_writer) = reflector::store();
    let (endpoints, endpoints_writer) = reflector::store();
    let config = watcher::Config::default();
    let services_stream = reflector(services_writer, watcher(kube::Api::all(client.clone()), config.clone()));
    let endpoints_stream = reflector(endpoints_writer, watcher(kube::Api::all(client), config));
    tokio::spawn(services_stream.default_backoff().for_each(|_| async {}));
    tokio::spawn(endpoints_stream.default_backoff().for_each(|_| async {}));
    services.wait_until_ready().await?;
    endpoints.wait_until_ready().await?;
    let cluster = Cluster { zone, services, endpoints };
    let socket = tokio::net::UdpSocket::bind(&listen).await?;
    eprintln!("node-dns: serving {} on udp {listen}", cluster.zone);
    let mut buffer = vec![0u8; 4096];
    loop {
        tokio::select! {
            received = socket.recv_from(&mut buffer) => {
                let (length, peer) = received?;
                if let Some(reply) = answer(&cluster, &buffer[..length]) {
                    socket.send_to(&reply, peer).await?;
                }
            }
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

fn arguments() -> Result<(String, String), Error> {
    let (mut listen, mut zone) = (None, "cluster.local".to_string());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next(),
            "--zone" => zone = args.next().ok_or("--zone needs a value")?,
            other => return Err(format!("unknown argument {other}; usage: {USAGE}").into()),
        }
    }
    Ok((listen.ok_or("--listen ADDR is required")?, zone.trim_matches('.').to_string()))
}

/// The reply to one datagram; none for what is not a query (nothing to answer to).
fn answer(cluster: &Cluster, datagram: &[u8]) -> Option<Vec<u8>> {
    let request = Message::from_vec(datagram).ok()?;
    if request.metadata.message_type != MessageType::Query {
        return None;
    }
    let mut reply = Message::response(request.metadata.id, request.metadata.op_code);
    reply.metadata.recursion_desired = request.metadata.recursion_desired;
    reply.metadata.authoritative = true;
    reply.add_queries(request.queries.iter().cloned());
    match (request.metadata.op_code, &request.queries[..]) {
        (OpCode::Query, [query]) => {
            let name = query.name();
            match cluster.resolve(&name.to_ascii()) {
                Answer::NoSuchName => reply.metadata.response_code = ResponseCode::NXDomain,
                Answer::Addresses(ips) if query.query_type() == RecordType::A => {
                    reply.add_answers(
                        ips.into_iter().map(|ip| Record::from_rdata(name.clone(), TTL, RData::A(rdata::A(ip)))),
                    );
                }
                Answer::Alias(target) if matches!(query.query_type(), RecordType::A | RecordType::CNAME) => {
                    let target = Name::from_str(&format!("{target}.")).ok()?;
                    reply.add_answer(Record::from_rdata(name.clone(), TTL, RData::CNAME(rdata::CNAME(target))));
                }
                // The name exists, with no record of that type (AAAA: the node has no IPv6).
                Answer::Addresses(_) | Answer::Alias(_) => {}
            }
        }
        _ => reply.metadata.response_code = ResponseCode::NotImp,
    }
    reply.to_vec().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::Query;

    fn ask(name: &str, kind: RecordType) -> Message {
        let mut query = Message::query();
        query.metadata.recursion_desired = true;
        query.add_query(Query::query(Name::from_str(name).unwrap(), kind));
        let reply = answer(&lookup::tests::cluster(), &query.to_vec().unwrap()).unwrap();
        let reply = Message::from_vec(&reply).unwrap();
        assert_eq!((reply.metadata.id, reply.metadata.message_type), (query.metadata.id, MessageType::Response));
        assert_eq!(reply.queries, query.queries);
        reply
    }

    #[test]
    fn answers_a_queries_and_says_which_names_do_not_exist() {
        let reply = ask("etcd-0.etcd.farm-system.svc.cluster.local.", RecordType::A);
        assert_eq!(reply.metadata.response_code, ResponseCode::NoError);
        let ips: Vec<_> = reply.answers.iter().map(|r| r.data.clone()).collect();
        assert_eq!(ips, vec![RData::A(rdata::A("10.244.0.5".parse().unwrap()))]);
        let reply = ask("etcd-0.etcd.farm-system.svc.cluster.local.", RecordType::AAAA);
        assert_eq!((reply.metadata.response_code, reply.answers.len()), (ResponseCode::NoError, 0), "exists, no IPv6");
        let reply = ask("etcd-9.etcd.farm-system.svc.cluster.local.", RecordType::A);
        assert_eq!((reply.metadata.response_code, reply.answers.len()), (ResponseCode::NXDomain, 0));
        let reply = ask("outside.farm-system.svc.cluster.local.", RecordType::A);
        assert_eq!(reply.answers[0].data, RData::CNAME(rdata::CNAME(Name::from_str("db.example.org.").unwrap())));
    }

    #[test]
    fn what_is_not_a_query_gets_no_reply_or_not_implemented() {
        assert_eq!(answer(&lookup::tests::cluster(), b"\x00\x01garbage"), None);
        let mut update = Message::new(7, MessageType::Query, OpCode::Update);
        update.add_query(Query::query(Name::from_str("etcd.farm-system.svc.cluster.local.").unwrap(), RecordType::A));
        let reply = Message::from_vec(&answer(&lookup::tests::cluster(), &update.to_vec().unwrap()).unwrap()).unwrap();
        assert_eq!(reply.metadata.response_code, ResponseCode::NotImp);
    }
}
