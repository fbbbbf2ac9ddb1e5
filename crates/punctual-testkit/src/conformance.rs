//! The store conformance suite: one set of checks, generic over
//! [`Store`](punctual_core::Store), that every backend runs unchanged. A backend is done
//! when the whole suite passes on it.
//!
//! It guards against the bugs that make delayed-task systems lose or duplicate work:
//! a task handed out before its due time, a cancelled task that fires anyway, two live
//! leases of one task, an expired or superseded lease whose late ack deletes or
//! re-arms a task that moved on, a replace that an old ack silently undoes, retries and
//! repeats that go missing or run forever, paging that skips or repeats tasks, counts
//! that lie, bad input that half-writes, and queue records, calendars or purges that
//! lose or leave behind what they should not. Each check's doc comment names the
//! guarantee of DESIGN.md or the clause of a `Store` method's contract it guards.
//!
//! Three levels, all deterministic and free of wall-clock sleeps:
//! - **store checks** call the trait directly with explicit `now` values;
//! - **engine checks** run [`Engine`](punctual_core::Engine) on a
//!   [`ManualClock`](punctual_core::ManualClock) and move time by hand;
//! - **worker checks** run [`Worker`](punctual_core::Worker) handlers that report over
//!   channels, and wait on those channels (and on the store's own signals, see
//!   `support::Signalling`) with a time limit; a limit that expires fails the check with
//!   what it was waiting for.
//!
//! Run it with [`store_conformance!`](crate::store_conformance) in a backend's `tests/`.

mod audit;
mod calendars;
mod completion;
mod consumers;
mod dead;
mod debounce;
mod expiry;
mod group_rate;
mod groups;
mod history;
mod identity;
mod import;
mod inspection;
mod leasing;
mod outbox;
mod priorities;
mod queues;
pub mod refusals;
mod repeat;
mod support;
mod targets;
mod timing;
mod traces;
mod unique;
mod upsert;
mod validation;

pub use audit::*;
pub use calendars::*;
pub use completion::*;
pub use consumers::*;
pub use dead::*;
pub use debounce::*;
pub use expiry::*;
pub use group_rate::*;
pub use groups::*;
pub use history::*;
pub use identity::*;
pub use import::*;
pub use inspection::*;
pub use leasing::*;
pub use outbox::*;
pub use priorities::*;
pub use queues::*;
pub use repeat::*;
pub use targets::*;
pub use timing::*;
pub use traces::*;
pub use unique::*;
pub use upsert::*;
pub use validation::*;

/// Expands to one `#[tokio::test]` per conformance check, each on a fresh store (two
/// fresh stores for the checks after the `;`, which compare stores).
///
/// `factory` is an expression callable as `factory()` that returns a future resolving
/// to `(store, guard)`: a new, empty store and a value kept alive until the check ends
/// (a temp dir, a Redis server). The calling crate needs `tokio` (features `macros`,
/// `rt-multi-thread`) among its dev-dependencies. In the embedded store's tests (plain
/// text here: this crate depends on no store, so it cannot compile the example):
///
/// A store that refuses tasks with a group where the factory's stores put their tasks
/// (the Redis store on a queue split into shards) passes `groups: refused` after the
/// factory: each group check then runs, as `<check>_is_refused`, the check that such a
/// task is refused with [`Error::Invalid`](punctual_core::Error::Invalid) on `group`
/// and leaves nothing behind, instead of the check itself, so every test run names
/// what did not run. Every other store passes them all.
///
/// ```text
/// punctual_testkit::store_conformance!(|| async {
///     let dir = tempfile::tempdir().expect("temp dir");
///     let store = punctual_sqlite::SqliteStore::open(dir.path()).expect("open store");
///     (store, dir)
/// });
/// ```
#[macro_export]
macro_rules! store_conformance {
    ($factory:expr $(,)?) => {
        $crate::store_conformance!($factory, groups: supported);
    };
    ($factory:expr, groups: $groups:ident $(,)?) => {
        $crate::__conformance_checks! {
            $groups;
            $factory;
            // leasing
            lease_hands_out_a_task_only_once_it_is_due,
            lease_hands_out_due_tasks_earliest_first_up_to_max,
            lease_reports_when_the_queue_has_work_next,
            two_leases_at_the_same_instant_never_share_a_task,
            concurrent_leases_hand_out_each_due_task_exactly_once,
            concurrent_acks_of_one_lease_succeed_once,
            concurrent_schedules_of_one_key_keep_one_task,
            // priorities
            lease_takes_the_highest_priority_first_and_never_before_due,
            a_replace_changes_the_priority_and_a_retry_or_expiry_keeps_it,
            schedule_refuses_a_priority_above_nine_and_changes_nothing,
            // groups
            a_group_limit_holds_its_leased_tasks_and_a_group_runs_in_due_order,
            groups_take_turns_so_a_backlog_never_starves_a_small_group,
            groups_are_listed_by_name_with_their_tasks_by_state,
            engine_holds_the_group_limit_and_wakes_a_consumer_when_the_group_has_room,
            a_group_rate_hands_out_at_most_count_leases_of_a_group_per_window,
            a_group_rate_holds_while_the_groups_tasks_come_and_go,
            engine_holds_the_group_rate_and_wakes_a_consumer_when_the_window_has_room,
            // timing and anchors
            a_tasks_timing_and_anchor_are_kept_as_written,
            a_debounced_due_time_before_scheduled_for_is_the_anchor,
            engine_applies_each_misfire_policy_after_an_outage,
            // debounce
            a_debounced_burst_fires_once_with_the_last_payload_by_its_first_time_plus_max_wait,
            a_debounced_schedule_after_a_lease_starts_a_new_burst,
            a_plain_replace_ends_a_debounced_burst,
            schedule_refuses_a_bad_debounce_and_changes_nothing,
            // dedupe windows
            a_schedule_within_a_completed_tasks_window_is_kept_with_its_summary,
            a_later_completion_replaces_the_record_and_one_without_a_window_leaves_none,
            a_dead_task_holds_its_key_for_its_window_only_when_asked,
            a_cancel_or_a_purge_writes_no_record,
            a_repeat_holds_its_key_only_after_its_final_occurrence,
            schedule_refuses_a_zero_unique_window_and_changes_nothing,
            // upsert
            schedule_creates_a_task_as_documented,
            replace_updates_the_task_and_keeps_its_identity,
            replace_revives_a_dead_task,
            keep_leaves_an_existing_task_untouched,
            error_mode_refuses_only_the_conflicting_item,
            same_key_twice_in_one_batch_is_applied_in_order,
            replace_while_leased_keeps_the_new_version,
            // lease expiry and stale tokens
            lease_is_not_live_at_or_after_its_expiry,
            stale_lease_after_reap_and_re_lease_changes_nothing,
            tokens_not_matching_the_live_lease_are_refused,
            re_created_task_gets_a_new_id_and_delivery_id,
            reap_ends_an_expired_lease_as_a_failed_try_due_at_once,
            reaping_the_last_attempt_makes_the_task_dead,
            reap_takes_the_earliest_expiries_first_and_reports_the_next,
            extend_moves_the_expiry_and_the_task_is_not_reaped_before_it,
            release_gives_the_task_back_untried,
            // completion, retries and dead tasks
            complete_applies_each_completion_as_documented,
            complete_many_applies_or_refuses_each_on_its_own,
            engine_retries_with_backoff_then_the_task_dies,
            outcome_fail_sends_the_task_to_dead_at_once,
            outcome_reschedule_starts_a_new_occurrence,
            dead_tasks_are_listed_and_can_be_retried,
            delete_dead_removes_only_dead_tasks,
            // dead tasks in bulk, retention
            retry_dead_batch_of_every_dead_task_retries_each_once,
            retry_dead_batch_by_tag_retries_only_its_dead_tasks,
            retry_dead_batch_by_keys_retries_the_dead_among_them,
            sweep_dead_deletes_what_died_by_the_time_those_first,
            engine_retries_dead_tasks_in_bulk_and_wakes_a_waiting_consumer,
            engine_deletes_dead_tasks_once_past_the_queues_retention,
            engine_applies_a_dead_retention_set_while_it_runs,
            // repeat
            every_repeats_at_a_fixed_rate_and_skips_missed_occurrences,
            times_fires_exactly_n_times_then_the_task_is_gone,
            until_ends_the_repeat_after_its_last_instant,
            cron_is_re_armed_with_the_ack_across_a_daylight_saving_change,
            // outbox rows applied once
            an_outbox_row_applies_once_whatever_its_key_went_through,
            a_refused_outbox_row_leaves_no_mark_and_applies_later,
            many_outbox_rows_apply_each_on_its_own_and_a_keys_rows_in_order,
            engine_applies_an_outbox_row_as_its_call_and_once,
            // get, cancel, list, stats, secret, close
            get_many_reads_each_key_as_get_does,
            cancel_removes_a_scheduled_task_so_it_never_fires,
            cancel_of_a_leased_task_refuses_its_ack_and_stops_retries_and_repeats,
            cancel_tag_removes_only_that_queues_tasks_with_the_tag,
            list_pages_visit_every_task_once_in_due_order,
            list_filters_by_state,
            list_by_tag_pages_the_tasks_carrying_it_in_due_order,
            stats_count_tasks_per_state_and_queue,
            secret_is_random_and_stays_the_same,
            closed_store_refuses_further_calls,
            // bad input at the library boundary
            schedule_refuses_invalid_names_and_changes_nothing,
            schedule_refuses_bad_policies_and_changes_nothing,
            schedule_refuses_an_oversized_payload_and_changes_nothing,
            schedule_many_refuses_an_oversized_batch_and_changes_nothing,
            schedule_many_refuses_bad_items_alone,
            lease_refuses_bad_options_and_leases_nothing,
            other_engine_calls_refuse_invalid_input_and_change_nothing,
            // engine and worker
            engine_lease_hands_out_a_task_only_once_it_is_due,
            an_earlier_task_wakes_a_waiting_consumer_at_once,
            a_waiting_consumer_gets_a_task_as_it_falls_due_and_nothing_after_wait,
            engine_reaper_refires_a_task_whose_lease_expired,
            worker_fires_a_task_at_its_due_time_never_before,
            worker_never_fires_a_task_cancelled_before_it_is_due,
            worker_cannot_retry_or_repeat_a_task_cancelled_while_its_handler_runs,
            worker_retries_a_failed_handler_under_the_same_delivery_id,
            // store identity and delivery ids
            every_task_and_delivery_id_carries_the_stores_identity,
            // queue records and purge
            a_queue_record_starts_at_version_one_and_each_change_adds_one,
            queue_records_are_sorted_by_name_and_each_is_its_queue_record,
            a_queue_change_at_another_version_is_a_conflict_and_changes_nothing,
            purge_cancels_exactly_the_selection_in_its_queue,
            // calendar records
            a_calendar_starts_at_version_one_and_a_removal_keeps_its_version,
            calendars_are_listed_by_name_and_touch_no_queue_or_task,
            a_calendar_change_at_another_version_is_a_conflict_and_changes_nothing,
            a_purged_leased_task_cannot_complete_and_leaves_no_trace,
            purge_in_batches_converges_to_none_left,
            a_target_is_stored_with_its_task_and_replaced_with_it,
            leases_of_one_lane_never_take_the_other_lanes_tasks,
            a_target_task_keeps_its_lane_through_retries_expiry_release_and_dead_retry,
            a_replace_moves_a_task_between_lanes,
            cancels_and_purges_reach_both_lanes,
            engine_pull_leases_never_hand_out_a_task_with_a_target,
            // moving between stores
            import_stores_each_task_as_it_stands_with_an_id_of_its_own,
            imported_tasks_lease_expire_die_and_list_as_their_state_says,
            an_imported_lease_holds_its_group_until_it_is_reaped,
            completion_records_are_paged_by_key_and_imported_while_they_hold,
            // history
            a_tasks_life_is_told_event_by_event_and_outlives_it,
            cancels_purges_and_other_changes_are_told_and_no_change_is_not,
            a_history_keeps_its_latest_events_and_a_read_only_those_since,
            sweeping_histories_forgets_the_keys_quiet_since_the_cutoff,
            a_done_tasks_key_keeps_only_its_history_until_a_task_comes_again,
            a_grouped_tasks_lease_is_told,
            histories_are_read_page_by_page_and_imported_before_a_keys_own,
            // trace contexts
            a_tasks_trace_context_lives_through_its_tries_and_a_replace_writes_its_own,
            // audit
            queue_and_calendar_changes_are_audited_and_a_refused_one_is_not,
            sweeping_the_audit_forgets_entries_before_the_cutoff,
            ;
            // on two fresh stores
            two_fresh_stores_never_share_a_delivery_id,
        }
    };
}

/// One test per check name; see [`store_conformance!`](crate::store_conformance).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_checks {
    ($groups:ident; $factory:expr; $($check:ident,)+ ; $($pair:ident,)+) => {
        $(
            $crate::__conformance_check!($groups; $factory; $check);
        )+
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $pair() {
                let factory = $factory;
                let ((first, first_guard), (second, second_guard)) = (factory().await, factory().await);
                $crate::conformance::$pair(first, second).await;
                drop((first_guard, second_guard));
            }
        )+
    };
}

/// One test of one check; with `refused`, a group check's test checks the refusal (see
/// [`store_conformance!`](crate::store_conformance)).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_check {
    (refused; $factory:expr; a_group_limit_holds_its_leased_tasks_and_a_group_runs_in_due_order) => {
        $crate::__conformance_refused!($factory; a_group_limit_holds_its_leased_tasks_and_a_group_runs_in_due_order);
    };
    (refused; $factory:expr; groups_take_turns_so_a_backlog_never_starves_a_small_group) => {
        $crate::__conformance_refused!($factory; groups_take_turns_so_a_backlog_never_starves_a_small_group);
    };
    (refused; $factory:expr; groups_are_listed_by_name_with_their_tasks_by_state) => {
        $crate::__conformance_refused!($factory; groups_are_listed_by_name_with_their_tasks_by_state);
    };
    (refused; $factory:expr; engine_holds_the_group_limit_and_wakes_a_consumer_when_the_group_has_room) => {
        $crate::__conformance_refused!($factory; engine_holds_the_group_limit_and_wakes_a_consumer_when_the_group_has_room);
    };
    (refused; $factory:expr; a_group_rate_hands_out_at_most_count_leases_of_a_group_per_window) => {
        $crate::__conformance_refused!($factory; a_group_rate_hands_out_at_most_count_leases_of_a_group_per_window);
    };
    (refused; $factory:expr; a_group_rate_holds_while_the_groups_tasks_come_and_go) => {
        $crate::__conformance_refused!($factory; a_group_rate_holds_while_the_groups_tasks_come_and_go);
    };
    (refused; $factory:expr; engine_holds_the_group_rate_and_wakes_a_consumer_when_the_window_has_room) => {
        $crate::__conformance_refused!($factory; engine_holds_the_group_rate_and_wakes_a_consumer_when_the_window_has_room);
    };
    (refused; $factory:expr; an_imported_lease_holds_its_group_until_it_is_reaped) => {
        $crate::__conformance_refused!($factory; an_imported_lease_holds_its_group_until_it_is_reaped);
    };
    (refused; $factory:expr; a_grouped_tasks_lease_is_told) => {
        $crate::__conformance_refused!($factory; a_grouped_tasks_lease_is_told);
    };
    ($groups:ident; $factory:expr; $check:ident) => {
        // Multi-threaded, so concurrent store calls really run at the same time.
        #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $check() {
            let factory = $factory;
            let (store, guard) = factory().await;
            $crate::conformance::$check(store).await;
            drop(guard);
        }
    };
}

/// The test that replaces the group check `$check` on a store refusing groups.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_refused {
    ($factory:expr; $check:ident) => {
        $crate::__paste::paste! {
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn [<$check _is_refused>]() {
                let factory = $factory;
                let (store, guard) = factory().await;
                $crate::conformance::refusals::a_task_with_a_group_is_refused_and_leaves_nothing(store).await;
                drop(guard);
            }
        }
    };
}

#[cfg(test)]
mod tests {
    /// Every `pub async fn` check of the modules, by name.
    fn checks_defined() -> Vec<String> {
        let sources = [
            include_str!("conformance/audit.rs"),
            include_str!("conformance/calendars.rs"),
            include_str!("conformance/completion.rs"),
            include_str!("conformance/consumers.rs"),
            include_str!("conformance/dead.rs"),
            include_str!("conformance/debounce.rs"),
            include_str!("conformance/expiry.rs"),
            include_str!("conformance/group_rate.rs"),
            include_str!("conformance/groups.rs"),
            include_str!("conformance/history.rs"),
            include_str!("conformance/identity.rs"),
            include_str!("conformance/import.rs"),
            include_str!("conformance/inspection.rs"),
            include_str!("conformance/leasing.rs"),
            include_str!("conformance/outbox.rs"),
            include_str!("conformance/priorities.rs"),
            include_str!("conformance/queues.rs"),
            include_str!("conformance/repeat.rs"),
            include_str!("conformance/targets.rs"),
            include_str!("conformance/timing.rs"),
            include_str!("conformance/traces.rs"),
            include_str!("conformance/unique.rs"),
            include_str!("conformance/upsert.rs"),
            include_str!("conformance/validation.rs"),
        ];
        let mut names: Vec<String> = sources
            .iter()
            .flat_map(|source| source.lines())
            .filter_map(|line| line.strip_prefix("pub async fn "))
            .map(|rest| rest.split(['<', '(']).next().unwrap_or_default().to_owned())
            .collect();
        names.sort();
        names
    }

    /// Every name `store_conformance!` expands to a test.
    fn checks_run() -> Vec<String> {
        let source = include_str!("conformance.rs");
        let start = source.find("$factory;").expect("the check list opens with $factory;");
        let list = &source[start..source[start..].find("};").map_or(source.len(), |end| start + end)];
        let mut names: Vec<String> = list
            .lines()
            .map(str::trim)
            .filter_map(|line| line.strip_suffix(','))
            .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .map(str::to_owned)
            .collect();
        names.sort();
        names
    }

    /// A check left out of the macro would silently never run.
    #[test]
    fn the_macro_runs_every_check_once() {
        let (defined, run) = (checks_defined(), checks_run());
        assert!(defined.len() > 50, "found only {} checks: {defined:?}", defined.len());
        let not_run: Vec<_> = defined.iter().filter(|name| !run.contains(name)).collect();
        let unknown: Vec<_> = run.iter().filter(|name| !defined.contains(name)).collect();
        assert!(not_run.is_empty(), "checks missing from store_conformance!: {not_run:?}");
        assert!(unknown.is_empty(), "store_conformance! names no such check: {unknown:?}");
        assert_eq!(run, defined, "a check is listed twice in store_conformance!");
    }
}
