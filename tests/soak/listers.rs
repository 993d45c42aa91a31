//! Listers and pagers: full LISTs and pagings with `limit` and `continue`, each checked as it arrives and recorded for the model.

use super::*;

/// Checks a LIST (or page) body: a `LlamaList` whose items parse, are in `scope`, are sorted by
/// namespace/name after `after`, and are not newer than `list_rv`. Returns the list's
/// resourceVersion and its items.
pub(crate) fn check_list(
    what: &str,
    body: &Value,
    scope: Scope,
    after: Option<Key>,
) -> Result<(u64, Vec<(Key, Obj)>), String> {
    if body["kind"] != "LlamaList" || body["apiVersion"] != "farm.example.com/v1alpha" {
        return Err(format!("{what}: not a LlamaList: {}", snippet(body.to_string().as_bytes())));
    }
    let rv: u64 = body["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .ok_or_else(|| format!("{what}: no numeric metadata.resourceVersion"))?;
    let items = body["items"].as_array().ok_or_else(|| format!("{what}: no items"))?;
    let mut out = Vec::with_capacity(items.len());
    let mut previous = after;
    for item in items {
        let (key, obj) = parse_object(item).map_err(|e| format!("{what}: {e}"))?;
        if previous.is_some_and(|p| p >= key) {
            return Err(format!(
                "{what}: {} comes after {} (not sorted by namespace/name, or twice)",
                show_key(key),
                show_key(previous.unwrap_or_default())
            ));
        }
        if !scope.selects(key, &obj) {
            return Err(format!("{what}: {} {obj} is outside {scope}", show_key(key)));
        }
        if obj.rv > rv {
            return Err(format!("{what}: {} has rv {} newer than the list's {rv}", show_key(key), obj.rv));
        }
        previous = Some(key);
        out.push((key, obj));
    }
    Ok((rv, out))
}

/// A full LIST of `scope`, checked by [`check_list`]; `None` for a 503 during an etcd outage.
pub(crate) async fn list_scope(
    shared: &Shared,
    client: &reqwest::Client,
    what: &str,
    scope: Scope,
) -> Result<Option<(u64, Vec<(Key, Obj)>)>, String> {
    let (code, body) = shared.call(what, client.get(shared.url(&scope.path("")))).await?;
    if shared.in_outage(code, &body) {
        shared.count("list 503 during the etcd outage");
        return Ok(None);
    }
    if code != 200 {
        return Err(unexpected(what, code, &body));
    }
    check_list(what, &body, scope, None).map(Some)
}

pub(crate) async fn lister(shared: Arc<Shared>, id: usize, seed: u64, stop: watch::Receiver<bool>) -> Vec<ListObs> {
    let client = shared.client(None);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = Vec::new();
    while !*stop.borrow() {
        // Lister 0 lists everything; the others random namespaces and selectors.
        let scope = if id == 0 { Scope { namespace: None, herd: None } } else { Scope::random(&mut rng, 0.3) };
        let what = format!("lister {id}: LIST {scope}");
        let result = list_scope(&shared, &client, &what, scope).await;
        match result {
            Ok(None) => {}
            Ok(Some((rv, items))) => {
                shared.count("list 200");
                let (count, digest) = digest(items.iter().map(|(k, o)| (*k, o)));
                seen.push(ListObs { what, scope, rv, count, digest });
            }
            Err(e) => shared.fail(e),
        }
    }
    seen
}

/// One paging: pages of `limit` until no continue token. `Ok(None)` when the token expired.
pub(crate) async fn paging(
    shared: &Shared,
    client: &reqwest::Client,
    what: &str,
    scope: Scope,
    limit: usize,
) -> Result<Option<ListObs>, String> {
    let mut items: Vec<(Key, Obj)> = Vec::new();
    let mut rv = None;
    let mut token: Option<String> = None;
    let mut total = None;
    for page in 1.. {
        let query = match &token {
            Some(t) => format!("limit={limit}&continue={t}"),
            None => format!("limit={limit}"),
        };
        let what = format!("{what}, page {page}");
        let (code, body) = shared.call(&what, client.get(shared.url(&scope.path(&query)))).await?;
        shared.count("list page");
        if shared.in_outage(code, &body) {
            shared.count("paging 503 during the etcd outage");
            return Ok(None);
        }
        if code == 410 && token.is_some() && is_status(&body, 410, "Expired") {
            // Legitimate only when more than HISTORY writes happened since the paging's rv.
            let paging_rv = rv.unwrap_or_default();
            let current = shared.current_rv(client).await.unwrap_or(u64::MAX);
            if current.saturating_sub(paging_rv) <= HISTORY {
                return Err(format!(
                    "{what}: 410 Expired for a continue token at rv {paging_rv}, but only {} writes happened since \
                     (now rv {current}) and the history holds {HISTORY}",
                    current.saturating_sub(paging_rv)
                ));
            }
            shared.count("paging 410 Expired: the history was too short (allowed, reported)");
            return Ok(None);
        }
        if code != 200 {
            return Err(unexpected(&what, code, &body));
        }
        let (page_rv, page_items) = check_list(&what, &body, scope, items.last().map(|(k, _)| *k))?;
        if *rv.get_or_insert(page_rv) != page_rv {
            return Err(format!("{what}: page at rv {page_rv}, the paging's first page was at rv {rv:?}"));
        }
        if limit < page_items.len() {
            return Err(format!("{what}: {} items for limit={limit}", page_items.len()));
        }
        items.extend(page_items);
        token = body["metadata"]["continue"].as_str().filter(|t| !t.is_empty()).map(str::to_string);
        if token.is_some() && scope.herd.is_none() {
            let remaining = body["metadata"]["remainingItemCount"]
                .as_u64()
                .ok_or_else(|| format!("{what}: a continue token without remainingItemCount"))?;
            let now = items.len() as u64 + remaining;
            if *total.get_or_insert(now) != now {
                return Err(format!(
                    "{what}: items so far + remainingItemCount is {now}, earlier pages said {total:?}"
                ));
            }
        }
        if token.is_none() {
            break;
        }
    }
    if let Some(total) = total
        && total != items.len() as u64
    {
        return Err(format!("{what}: {} items in all, remainingItemCount promised {total}", items.len()));
    }
    let (count, digest) = digest(items.iter().map(|(k, o)| (*k, o)));
    Ok(Some(ListObs { what: what.to_string(), scope, rv: rv.unwrap_or_default(), count, digest }))
}

pub(crate) async fn pager(shared: Arc<Shared>, id: usize, seed: u64, stop: watch::Receiver<bool>) -> Vec<ListObs> {
    let client = shared.client(None);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = Vec::new();
    while !*stop.borrow() {
        let scope = Scope::random(&mut rng, 0.25);
        let limit = rng.random_range(1..=30);
        let what = format!("pager {id}: paging {scope} with limit={limit}");
        match paging(&shared, &client, &what, scope, limit).await {
            Ok(Some(obs)) => {
                shared.count("paging complete");
                seen.push(obs);
            }
            Ok(None) => {}
            Err(e) => shared.fail(e),
        }
    }
    seen
}
