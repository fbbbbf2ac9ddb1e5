//! What a caller can observe, read from both stores after every step: every task by
//! `get`, `stats`, and each queue listed page by page, in all and by tag. Also the
//! paging sessions of [`Op::ListPage`](crate::model::Op::ListPage), which span steps.
//!
//! Listings are compared modulo the tie order: each store's own listing must hold the
//! tasks its `get` gives, in due order; the real store's tie order is remembered (the
//! next `lease` must follow it) and must not change for tasks nobody wrote.

use std::collections::{BTreeMap, BTreeSet};

use punctual_core::store::ListRequest;
use punctual_core::{QueueName, Store, Tag, Task, TaskKey, TaskState};

use super::Twin;
use crate::model::{KEYS, MAX_PAGES, OBSERVE_PAGE_LIMIT, QUEUES, Slot, StateFilter, TAGS, queue_name, tag, task_key};

/// What both stores held after the last step.
#[derive(Debug, Default)]
pub(super) struct View {
    pub(super) reference: BTreeMap<Slot, Task>,
    pub(super) real: BTreeMap<Slot, Task>,
    /// Per queue, its keys in the order of the real store's last full listing: the
    /// store's tie order.
    pub(super) real_order: BTreeMap<QueueName, Vec<TaskKey>>,
}

/// A paging session of the real store in progress: pages fetched one operation at a
/// time, with other operations in between.
#[derive(Debug)]
pub(super) struct PagingSession {
    queue: QueueName,
    state: Option<TaskState>,
    tag: Option<Tag>,
    limit: u32,
    cursor: Option<String>,
    pages: usize,
    /// (key, id) of every task returned so far, with how often.
    seen: BTreeMap<(TaskKey, u64), u32>,
    /// Tasks present when the session started and not written or deleted since: each
    /// must be visited exactly once.
    in_place: BTreeSet<(TaskKey, u64)>,
    /// The latest due time among in-place tasks returned so far.
    latest_in_place_due: Option<punctual_core::Timestamp>,
}

/// A queue listed page by page with nothing in between.
struct Listing {
    tasks: Vec<Task>,
}

impl<S: Store> Twin<'_, S> {
    pub(super) async fn observe(&mut self) -> Result<(), String> {
        let mut now_held = View::default();
        for queue in 0..QUEUES.len() {
            for key in 0..KEYS.len() {
                let slot = (queue_name(queue), task_key(key));
                let real = self.real.get(&slot.0, &slot.1).await.map_err(|e| format!("get failed: {e:?}"))?;
                let reference = self.reference.get(&slot.0, &slot.1).await.map_err(|e| format!("get: {e:?}"))?;
                match (real, reference) {
                    (Some(real), Some(reference)) => {
                        self.ids.same(&reference, &real).map_err(|e| format!("get: {e}"))?;
                        now_held.real.insert(slot.clone(), real);
                        now_held.reference.insert(slot, reference);
                    }
                    (None, None) => {}
                    (real, reference) => {
                        return Err(format!(
                            "get {}/{}: the store has {real:?}, the reference store {reference:?}",
                            slot.0, slot.1
                        ));
                    }
                }
            }
        }
        // Written this step: whatever reads differently, and what an extend wrote.
        let mut written = std::mem::take(&mut self.extended);
        let slots: BTreeSet<&Slot> = self.view.reference.keys().chain(now_held.reference.keys()).collect();
        written.extend(
            slots.into_iter().filter(|slot| self.view.reference.get(*slot) != now_held.reference.get(*slot)).cloned(),
        );
        if let Some(session) = self.paging.as_mut() {
            session.in_place.retain(|(key, _)| !written.contains(&(session.queue.clone(), key.clone())));
        }
        now_held.real_order = std::mem::take(&mut self.view.real_order);
        self.view = now_held;

        self.stats(None).await?;
        for queue in 0..=QUEUES.len() {
            self.stats(Some(queue_name(queue))).await?;
        }
        for queue in 0..QUEUES.len() {
            self.list_everything(queue_name(queue), &written).await?;
        }
        Ok(())
    }

    /// Lists the queue in both stores, in all and by each tag: exactly the tasks each
    /// holds, in due order, ties in a stable order. Remembers the real store's order.
    async fn list_everything(&mut self, queue: QueueName, written: &BTreeSet<Slot>) -> Result<(), String> {
        let real = list_all(self.real, &self.view.real, &queue, None).await.map_err(|e| format!("the store: {e}"))?;
        let reference = list_all(self.reference, &self.view.reference, &queue, None)
            .await
            .map_err(|e| format!("the reference store: {e}"))?;
        let keys: Vec<TaskKey> = real.tasks.iter().map(|task| task.key.clone()).collect();
        // Tasks nobody wrote since the last listing keep their due times, so their
        // relative order may differ only among ties — where the order must be stable.
        let unwritten = |key: &TaskKey| {
            let slot = (queue.clone(), key.clone());
            self.view.real.contains_key(&slot) && !written.contains(&slot)
        };
        let before: Vec<&TaskKey> =
            self.view.real_order.get(&queue).into_iter().flatten().filter(|key| unwritten(key)).collect();
        let now_listed: Vec<&TaskKey> = keys.iter().filter(|key| unwritten(key)).collect();
        if before != now_listed {
            return Err(format!(
                "listing {queue}: tasks nobody wrote changed order among equal due times, from {before:?} to \
                 {now_listed:?}; ties must be broken by a stable order"
            ));
        }
        for index in 0..TAGS.len() {
            let tag = tag(index);
            for (name, store_listing, tagged) in [
                ("the store", &real, list_all(self.real, &self.view.real, &queue, Some(&tag)).await),
                (
                    "the reference store",
                    &reference,
                    list_all(self.reference, &self.view.reference, &queue, Some(&tag)).await,
                ),
            ] {
                let tagged = tagged.map_err(|e| format!("{name}: {e}"))?;
                let expected: Vec<&TaskKey> =
                    store_listing.tasks.iter().filter(|task| task.tags.contains(&tag)).map(|task| &task.key).collect();
                let listed: Vec<&TaskKey> = tagged.tasks.iter().map(|task| &task.key).collect();
                if listed != expected {
                    return Err(format!(
                        "{name}: listing {queue} tagged {tag} gave {listed:?}; the tasks carrying it, in the order of \
                         the full listing, are {expected:?}"
                    ));
                }
            }
        }
        self.view.real_order.insert(queue, keys);
        Ok(())
    }

    /// The next page of the open paging session of the real store, or the first page
    /// of a new one.
    pub(super) async fn list_page(
        &mut self,
        queue: QueueName,
        filter: StateFilter,
        tag: Option<Tag>,
        limit: u32,
    ) -> Result<(), String> {
        let mut session = match self.paging.take() {
            Some(session) => session,
            None => {
                let state = match filter {
                    StateFilter::AnyState => None,
                    StateFilter::OnlyScheduled => Some(TaskState::Scheduled),
                    StateFilter::OnlyLeased => Some(TaskState::Leased),
                    StateFilter::OnlyDead => Some(TaskState::Dead),
                };
                let in_place = (self.view.real.iter())
                    .filter(|(slot, task)| slot.0 == queue && state.is_none_or(|s| task.state == s))
                    .filter(|(_, task)| tag.as_ref().is_none_or(|tag| task.tags.contains(tag)))
                    .map(|(slot, task)| (slot.1.clone(), task.meta.id))
                    .collect();
                PagingSession {
                    queue,
                    state,
                    tag,
                    limit,
                    cursor: None,
                    pages: 0,
                    seen: BTreeMap::new(),
                    in_place,
                    latest_in_place_due: None,
                }
            }
        };
        let mut request = ListRequest::new(session.queue.clone(), session.state, session.limit, session.cursor.clone());
        if let Some(tag) = &session.tag {
            request = request.tagged(tag.clone());
        }
        let page = self.real.list(request).await.map_err(|e| format!("list failed: {e:?}"))?;
        session.pages += 1;
        let what = format!(
            "page {} of {} ({:?}, tag {:?}, limit {})",
            session.pages, session.queue, session.state, session.tag, session.limit
        );
        if page.tasks.len() > session.limit as usize {
            return Err(format!("{what} has {} tasks", page.tasks.len()));
        }
        let mut previous_due = None;
        for task in &page.tasks {
            if task.queue != session.queue || session.state.is_some_and(|state| task.state != state) {
                return Err(format!("{what} returned {}/{} in state {}", task.queue, task.key, task.state));
            }
            if session.tag.as_ref().is_some_and(|tag| !task.tags.contains(tag)) {
                return Err(format!("{what} returned {} with tags {:?}", task.key, task.tags));
            }
            held_as_listed(&self.view.real, task).map_err(|e| format!("{what}: {e}"))?;
            if previous_due.is_some_and(|due| task.due_at < due) {
                return Err(format!("{what} is not in due order: {} due {} comes later", task.key, task.due_at));
            }
            previous_due = Some(task.due_at);
            let identity = (task.key.clone(), task.meta.id);
            let times_seen = session.seen.entry(identity.clone()).or_default();
            *times_seen += 1;
            if session.in_place.contains(&identity) {
                if *times_seen > 1 {
                    return Err(format!("{what} returned {} again, though it stayed in place", task.key));
                }
                if session.latest_in_place_due.is_some_and(|due| task.due_at < due) {
                    return Err(format!("{what}: {} due {} comes after a later task", task.key, task.due_at));
                }
                session.latest_in_place_due = Some(task.due_at);
            }
        }
        match page.next_cursor {
            Some(cursor) if session.pages < MAX_PAGES => {
                session.cursor = Some(cursor);
                self.paging = Some(session);
                Ok(())
            }
            Some(_) => Err(format!("paging did not end after {MAX_PAGES} pages")),
            None => {
                let missed: Vec<String> = (session.in_place.iter())
                    .filter(|identity| !session.seen.contains_key(*identity))
                    .map(|(key, _)| key.to_string())
                    .collect();
                if missed.is_empty() {
                    Ok(())
                } else {
                    Err(format!("{what} ended the listing without {missed:?}, which stayed in place"))
                }
            }
        }
    }
}

/// Lists `queue` of `store` page by page (by `tag` when given): exactly the tasks of
/// `held` (what `get` gave) in the queue, each as held, in due order.
async fn list_all(
    store: &impl Store,
    held: &BTreeMap<Slot, Task>,
    queue: &QueueName,
    tag: Option<&Tag>,
) -> Result<Listing, String> {
    let what = match tag {
        Some(tag) => format!("listing {queue} tagged {tag}"),
        None => format!("listing {queue}"),
    };
    let expected: BTreeSet<&TaskKey> = (held.iter())
        .filter(|(slot, task)| slot.0 == *queue && tag.is_none_or(|tag| task.tags.contains(tag)))
        .map(|(slot, _)| &slot.1)
        .collect();
    // As many pages as the tasks need, and two more (an empty last page is allowed);
    // by tag, a store may return short pages, so the bound counts every task held.
    let counted = if tag.is_some() { held.len() } else { expected.len() };
    let most_pages = counted / OBSERVE_PAGE_LIMIT as usize + 2;
    let mut tasks: Vec<Task> = Vec::new();
    let mut cursor = None;
    for page_number in 1.. {
        if page_number > most_pages {
            return Err(format!("{what}: {} tasks took over {most_pages} pages", expected.len()));
        }
        let mut request = ListRequest::new(queue.clone(), None, OBSERVE_PAGE_LIMIT, cursor.take());
        if let Some(tag) = tag {
            request = request.tagged(tag.clone());
        }
        let page = store.list(request).await.map_err(|e| format!("{what} failed: {e:?}"))?;
        if page.tasks.len() > OBSERVE_PAGE_LIMIT as usize {
            return Err(format!("{what}: page {page_number} has {} tasks", page.tasks.len()));
        }
        tasks.extend(page.tasks);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    for task in &tasks {
        held_as_listed(held, task).map_err(|e| format!("{what}: {e}"))?;
    }
    let keys: Vec<&TaskKey> = tasks.iter().map(|task| &task.key).collect();
    let distinct: BTreeSet<&TaskKey> = keys.iter().copied().collect();
    if distinct.len() != keys.len() || distinct != expected {
        return Err(format!("{what} gave {keys:?}; get finds {expected:?}"));
    }
    if let Some(pair) = tasks.windows(2).find(|pair| pair[1].due_at < pair[0].due_at) {
        return Err(format!(
            "{what} is not in due order: {} due {} before {} due {}",
            pair[0].key, pair[0].due_at, pair[1].key, pair[1].due_at
        ));
    }
    Ok(Listing { tasks })
}

/// A listed task must be the task `get` gave for its (queue, key).
fn held_as_listed(held: &BTreeMap<Slot, Task>, listed: &Task) -> Result<(), String> {
    match held.get(&(listed.queue.clone(), listed.key.clone())) {
        Some(task) if task == listed => Ok(()),
        other => Err(format!("listed {listed:?}, but get gives {other:?}")),
    }
}
