//! Comparing a task as the real store holds it with the same task in the reference
//! store. Everything must be equal but what the contract leaves to each store, which is
//! learned from the store's own answers and then held to:
//! - `meta.store`: one identity for every task of the store;
//! - `meta.id`: learned at each creation, never one an earlier creation had;
//! - `meta.fence`: learned at creation, and at each lease, where it must grow;
//! - the `last_error` a `reap` writes: learned the first time the task is read after
//!   it, must say the lease expired.

use std::collections::{BTreeMap, BTreeSet};

use punctual_core::{Completed, StoreId, Task};

use super::Slot;

/// What the real store chose where the contract lets it, as learned so far.
#[derive(Debug, Default)]
pub(super) struct Identities {
    /// The real store's identity, once a task showed it.
    real_store: Option<StoreId>,
    /// Reference id → real id, for every task created.
    ids: BTreeMap<u64, u64>,
    /// Every id the real store has given a creation.
    real_ids: BTreeSet<u64>,
    /// Reference id → (reference fence, real fence), as of the task's latest lease.
    fences: BTreeMap<u64, (u64, u64)>,
    /// Slots whose `last_error` a reap wrote: the real store's text once seen.
    expiry_texts: BTreeMap<Slot, Option<ExpiryText>>,
}

/// The text each store wrote when it reaped a task.
#[derive(Debug)]
struct ExpiryText {
    real: String,
    reference: String,
}

impl Identities {
    /// Both stores have just created a task: learns the real store's id and first fence.
    pub(super) fn created(&mut self, reference: &Task, real: &Task) -> Result<(), String> {
        let id = real.meta.id;
        if !self.real_ids.insert(id) {
            return Err(format!(
                "the new task got id {id}, which an earlier creation already had: a re-created task must get a \
                 new id, or leases of the old one could complete it"
            ));
        }
        if self.ids.insert(reference.meta.id, id).is_some() {
            return Err(format!("the reference store gave id {} twice", reference.meta.id));
        }
        self.fences.insert(reference.meta.id, (reference.meta.fence, real.meta.fence));
        Ok(())
    }

    /// Both stores have just leased the task: the real fence must have grown.
    pub(super) fn leased(&mut self, reference: &Task, real: &Task) -> Result<(), String> {
        let Some((_, before)) = self.fences.get(&reference.meta.id).copied() else {
            return Err(format!("{} was leased but never created", real.key));
        };
        // "Fence raised above every fence it had": a store may jump further than one
        // (the embedded one starts each open at an epoch).
        if real.meta.fence <= before {
            return Err(format!(
                "leasing {} moved its fence from {before} to {}: it must grow with every lease",
                real.key, real.meta.fence
            ));
        }
        self.fences.insert(reference.meta.id, (reference.meta.fence, real.meta.fence));
        Ok(())
    }

    /// Both stores have just imported a task: learns its real id and fence, as at a
    /// creation, and forgets what an earlier task of its slot taught about reap texts
    /// (the imported task's error is the same text in both).
    pub(super) fn imported(&mut self, reference: &Task, real: &Task) -> Result<(), String> {
        self.created(reference, real)?;
        self.expiry_texts.remove(&(real.queue.clone(), real.key.clone()));
        Ok(())
    }

    /// The reap that just ran ended the lease of the task in `slot`.
    pub(super) fn reaped(&mut self, slot: Slot) {
        self.expiry_texts.insert(slot, None);
    }

    /// Compares the completion records of a dedupe window that kept a schedule in each
    /// store: equal, the real id the one learned at the task's creation.
    pub(super) fn same_record(&self, reference: Option<&Completed>, real: Option<&Completed>) -> Result<(), String> {
        let (Some(reference), Some(real)) = (reference, real) else {
            return Err(format!("kept with no task, records: store {real:?}, reference {reference:?}"));
        };
        let mut seen = real.clone();
        match self.ids.get(&reference.id) {
            Some(id) if *id == real.id => seen.id = reference.id,
            _ => return Err(format!("the record's id {} is not the completed task's", real.id)),
        }
        if seen == *reference {
            Ok(())
        } else {
            Err(format!("the record that kept it differs: store {real:?}, reference {reference:?}"))
        }
    }

    /// Compares `real` with `reference`, the same task in the other store.
    pub(super) fn same(&mut self, reference: &Task, real: &Task) -> Result<(), String> {
        let name = format!("{}/{}", real.queue, real.key);
        let seen = self.in_reference_terms(reference, real).map_err(|e| format!("{name}: {e}"))?;
        let differences = differences(&seen, reference);
        if differences.is_empty() {
            Ok(())
        } else {
            Err(format!("{name} differs from the reference store: {}", differences.join("; ")))
        }
    }

    /// `real` with what the store chose replaced by the reference's counterpart, once
    /// it matches what was learned.
    fn in_reference_terms(&mut self, reference: &Task, real: &Task) -> Result<Task, String> {
        let mut seen = real.clone();
        let store = *self.real_store.get_or_insert(real.meta.store);
        if real.meta.store != store {
            return Err(format!("meta.store is {}, other tasks of the store carry {store}", real.meta.store));
        }
        seen.meta.store = reference.meta.store;
        match self.ids.get(&reference.meta.id) {
            Some(id) if *id == real.meta.id => seen.meta.id = reference.meta.id,
            Some(id) => return Err(format!("meta.id is {}, it was created with {id}", real.meta.id)),
            None => return Err(format!("the reference's id {} was never created", reference.meta.id)),
        }
        match self.fences.get(&reference.meta.id) {
            Some((fence, real_fence)) if *fence == reference.meta.fence => {
                if real.meta.fence != *real_fence {
                    return Err(format!(
                        "meta.fence moved from {real_fence} to {} without a lease: only a lease raises it",
                        real.meta.fence
                    ));
                }
                seen.meta.fence = reference.meta.fence;
            }
            _ => return Err(format!("the reference's fence {} was never seen leased", reference.meta.fence)),
        }
        let slot = (real.queue.clone(), real.key.clone());
        match self.expiry_texts.get(&slot) {
            Some(None) => match &real.last_error {
                Some(text) if text.to_lowercase().contains("expire") => {
                    let reference_text = reference.last_error.clone().unwrap_or_default();
                    let learned = ExpiryText { real: text.clone(), reference: reference_text };
                    seen.last_error = reference.last_error.clone();
                    self.expiry_texts.insert(slot, Some(learned));
                }
                other => return Err(format!("after reap, last_error must say the lease expired, it is {other:?}")),
            },
            // The learned text, exactly: the reference's counterpart.
            Some(Some(learned))
                if reference.last_error.as_ref() == Some(&learned.reference)
                    && real.last_error.as_ref() == Some(&learned.real) =>
            {
                seen.last_error = reference.last_error.clone();
            }
            // Another text: the comparison says how it differs.
            Some(Some(learned)) if reference.last_error.as_ref() == Some(&learned.reference) => {}
            // Written since: the texts are the caller's again.
            Some(Some(_)) => {
                self.expiry_texts.remove(&slot);
            }
            None => {}
        }
        Ok(seen)
    }
}

/// Every field in which the store's task differs from the reference's.
fn differences(actual: &Task, expected: &Task) -> Vec<String> {
    let mut found = Vec::new();
    macro_rules! compare {
        ($($field:ident).+) => {
            if actual.$($field).+ != expected.$($field).+ {
                found.push(format!(
                    "{}: store {:?}, reference {:?}",
                    stringify!($($field).+),
                    actual.$($field).+,
                    expected.$($field).+
                ));
            }
        };
    }
    compare!(queue);
    compare!(key);
    compare!(state);
    compare!(due_at);
    compare!(payload);
    compare!(attempts);
    compare!(max_attempts);
    compare!(backoff);
    compare!(repeat);
    compare!(tags);
    compare!(version);
    compare!(created_at);
    compare!(updated_at);
    compare!(lease_expires_at);
    compare!(last_error);
    compare!(meta.store);
    compare!(meta.id);
    compare!(meta.fence);
    compare!(meta.occurrence);
    compare!(meta.anchor);
    if found.is_empty() && actual != expected {
        found.push(format!("store {actual:?}, reference {expected:?}"));
    }
    found
}
