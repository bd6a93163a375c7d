//! One merge for every path that merges a run: the user's approval
//! (`approve_run`), a supervisor's (or a co-signed) decision on the merge
//! review (`review_effect`), and auto-advance when a run finishes. Each calls
//! [`Engine::merge_run`], and only it writes to the user's repository.
//!
//! A merge is idempotent across a crash: its intent (run, base branch, the
//! base's commit before, the reviewed commit) is recorded before git runs, the
//! merge commit is recorded before it is put on the branch, and a merge whose
//! reviewed commit is already on the base is never made again: with a record,
//! the record is completed; without one, the work was merged outside
//! Overseer, which is recorded as a signed security event, put in the run's
//! timeline and notified.

use crate::notify::NotificationKind;
use crate::Merges;
use overseer_core::activity::{Activity, SecurityEntry, SecurityEvent};
use overseer_core::supervision::{resolve, Autonomy, DecisionRecord, Resolution, Vote};
use overseer_core::{
    Actor, ApiError, ErrorCode, GateKind, GateView, MergeReviewChoice, RunEvent, RunId, RunState,
    RunView,
};
use overseer_git as git;
use overseer_store::{MergeRecord, RunWork};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use overseer_core::activity::MergeOutcome;

/// What the run's timeline says about a merge's outcome.
fn outcome_text(outcome: &MergeOutcome, base: &str) -> String {
    match outcome {
        MergeOutcome::Merged { commit } => format!("merged into {base} as {}", short(commit)),
        MergeOutcome::AlreadyMerged { commit: Some(c) } => format!(
            "already merged into {base} as {} (the record was completed; nothing merged again)",
            short(c)
        ),
        MergeOutcome::AlreadyMerged { commit: None } => {
            format!("already merged into {base} (the record was completed; nothing merged again)")
        }
        MergeOutcome::MergedOutside => format!(
            "already on {base}, merged outside Overseer (a security event); nothing merged again"
        ),
        MergeOutcome::NothingToMerge => "the run changed nothing: nothing to merge".to_owned(),
        MergeOutcome::NoRepository => "the run has no repository: nothing to merge".to_owned(),
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// One merge at a time in this process: two paths approving the same run at
/// once (the supervisor's effect and a human's retry) see each other's record.
static MERGING: Mutex<()> = Mutex::new(());

/// Where a run's merge reads and writes.
struct Sides {
    user: PathBuf,
    repo: PathBuf,
    base: String,
    branch: String,
    /// Where the run's work starts (its base commit).
    from: String,
    /// The reviewed commit.
    tip: String,
}

/// Where a run's merge stops (tests of a crash between git and the database).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Never,
    AfterGit,
}

/// The hidden ref a run's reviewed commit is fetched into (never a branch).
pub fn hidden_ref(run: RunId) -> String {
    format!("refs/overseer/runs/{run}")
}

impl Merges {
    /// Merges a run's reviewed commit into its base branch in the user's
    /// repository, once: the only way Overseer writes to the user's
    /// repository. Does not decide the review or move the run: its callers do.
    pub fn merge_run(&self, run: RunId, actor: &Actor) -> Result<MergeOutcome, ApiError> {
        self.merge_until(run, actor, Stop::Never)
    }

    /// [`Engine::merge_run`] up to and including git's merge, without
    /// recording that it is done: what a crash right after git merged leaves
    /// behind. For tests of crash recovery only.
    #[doc(hidden)]
    pub fn merge_run_crashing_after_git(
        &self,
        run: RunId,
        actor: &Actor,
    ) -> Result<MergeOutcome, ApiError> {
        self.merge_until(run, actor, Stop::AfterGit)
    }

    fn merge_until(&self, run: RunId, actor: &Actor, stop: Stop) -> Result<MergeOutcome, ApiError> {
        // An approved merge is awaited: git at the engine's own priority.
        git::foreground(|| self.merge_now(run, actor, stop))
    }

    fn merge_now(&self, run: RunId, actor: &Actor, stop: Stop) -> Result<MergeOutcome, ApiError> {
        let _one = MERGING.lock().unwrap_or_else(|p| p.into_inner());
        let work = self.store().run_work(run)?;
        if let Some(m) = self.store().merge_record(run)?.filter(|m| m.done) {
            return Ok(match m.outcome.as_deref() {
                Some("nothing_to_merge") => MergeOutcome::NothingToMerge,
                Some("merged_outside") => MergeOutcome::MergedOutside,
                _ => MergeOutcome::AlreadyMerged {
                    commit: m.merge_commit,
                },
            });
        }
        let Some(sides) = sides(&work)? else {
            return Ok(MergeOutcome::NoRepository);
        };
        // Auto-advance never merges files other tools run on their own.
        if *actor == Actor::Engine {
            if let Some(why) = self.merge_needs_a_human(run) {
                return Err(ApiError::new(
                    ErrorCode::Forbidden,
                    format!("run {run} is not merged without a human: {why}"),
                ));
            }
        }
        let Sides {
            user,
            repo,
            base,
            branch,
            from,
            tip,
        } = &sides;
        let old = git::commit_of(user, &format!("refs/heads/{base}"))?;
        let done = |commit: Option<&str>, outcome: &str, before: &str| {
            let now = self.clock.now();
            self.write(|tx| tx.finish_merge(run, base, before, tip, commit, outcome, actor, now))
        };
        if git::commits_between(repo, from, tip, &[])?.is_empty() {
            done(None, "nothing_to_merge", &old)?;
            return Ok(MergeOutcome::NothingToMerge);
        }
        let merges = self.store().merges_of_task(work.task_id)?;
        if git::contains(user, &old, tip)? {
            // Ours, from before a crash (or an earlier run of the task): the
            // record is completed, nothing merged again.
            if let Some(m) = merges.iter().find(|m| &m.tip == tip) {
                let commit = merge_commit_of(user, &old, tip, m);
                done(commit.as_deref(), "merged", &m.base_before)?;
                return Ok(MergeOutcome::AlreadyMerged { commit });
            }
            self.unrecorded_merge(&work, base, &old, tip, std::slice::from_ref(tip));
            done(None, "merged_outside", &old)?;
            return Ok(MergeOutcome::MergedOutside);
        }
        // Part of the run's work on the base without a merge of ours: said,
        // and the rest merged as reviewed.
        let ours: Vec<String> = merges
            .iter()
            .filter(|m| m.run_id != run)
            .map(|m| m.tip.clone())
            .collect();
        let unaccounted = git::commits_between(repo, from, tip, &ours)?;
        let outside = git::reachable_from(user, &unaccounted, &old)?;
        if !outside.is_empty() {
            self.unrecorded_merge(&work, base, &old, tip, &outside);
        }

        // The intent, before git writes anything to the user's repository.
        let now = self.clock.now();
        self.write(|tx| tx.begin_merge(run, base, &old, tip, actor, now))?;
        let hidden = hidden_ref(run);
        let message = format!("Merge run {run}: {}", work.task_title);
        let merged = (|| -> Result<String, ApiError> {
            git::fetch_commit(user, repo, tip, &hidden)?;
            let commit = git::merge_commit(user, base, &old, tip, branch, &message)?;
            let now = self.clock.now();
            self.write(|tx| tx.set_merge_commit(run, &commit, now))?;
            git::advance_base(user, base, &old, &commit)?;
            Ok(commit)
        })();
        if let Err(e) = git::delete_ref(user, &hidden) {
            tracing::warn!(run = %run, "cannot delete {hidden} in {}: {e}", user.display());
        }
        let commit = merged?;
        if stop == Stop::AfterGit {
            return Ok(MergeOutcome::Merged { commit });
        }
        done(Some(&commit), "merged", &old)?;
        Ok(MergeOutcome::Merged { commit })
    }

    /// Checks, when a run enters review, that none of its work is already on
    /// its base branch without a merge of Overseer's; says so if it is.
    pub(crate) fn check_unrecorded_merge(&self, run: RunId) -> Result<(), ApiError> {
        let work = self.store().run_work(run)?;
        let Some(sides) = sides(&work)? else {
            return Ok(());
        };
        let old = git::commit_of(&sides.user, &format!("refs/heads/{}", sides.base))?;
        let ours: Vec<String> = self
            .store()
            .merges_of_task(work.task_id)?
            .into_iter()
            .map(|m| m.tip)
            .collect();
        let commits = git::commits_between(&sides.repo, &sides.from, &sides.tip, &ours)?;
        let outside = git::reachable_from(&sides.user, &commits, &old)?;
        if !outside.is_empty() {
            self.unrecorded_merge(&work, &sides.base, &old, &sides.tip, &outside);
        }
        Ok(())
    }

    /// A run's commits found on the base branch without a merge of Overseer's:
    /// a signed security event, the run's timeline, and the user (once).
    fn unrecorded_merge(&self, work: &RunWork, base: &str, at: &str, tip: &str, found: &[String]) {
        let run = work.run_id;
        let said = self
            .store()
            .run_events(run, 0, i64::MAX)
            .map(|events| {
                events
                    .iter()
                    .any(|e| matches!(&e.entry, Activity::Security(s) if s.event == Some(SecurityEvent::UnrecordedMerge)))
            })
            .unwrap_or(false);
        if said {
            return;
        }
        let text = format!(
            "{} of run {run}'s commits {} already on {base} ({}) although Overseer never merged {}: {base} was moved outside a reviewed merge. Overseer will not merge {} again; look at who moved {base}",
            found.len(),
            if found.len() == 1 { "is" } else { "are" },
            short(at),
            if found.len() == 1 { "it" } else { "them" },
            if found.len() == 1 { "it" } else { "them" },
        );
        tracing::error!(run = %run, "{text}");
        self.audit(
            &Actor::Engine,
            overseer_core::audit::AuditPayload::SecurityEvent(
                overseer_core::audit::SecurityPayload::UnrecordedMerge {
                    run_id: run,
                    base: base.to_owned(),
                    base_commit: at.to_owned(),
                    tip: tip.to_owned(),
                    found: json!(found),
                },
            ),
        );
        if let Err(e) = self.record_activity(
            run,
            Activity::Security(SecurityEntry {
                text: text.clone(),
                event: Some(SecurityEvent::UnrecordedMerge),
                base: Some(base.to_owned()),
                base_commit: Some(at.to_owned()),
                found: Some(found.to_vec()),
                ..SecurityEntry::default()
            }),
        ) {
            tracing::error!(run = %run, "cannot record the unrecorded merge: {}", e.message);
        }
        self.notify_user(
            NotificationKind::SecurityEvent,
            run,
            format!("Run {run}'s work is on {base}, merged outside Overseer"),
            text,
        );
    }

    /// Says in the run's timeline how its merge went.
    pub(crate) fn note_merge(&self, run: RunId, outcome: &MergeOutcome) {
        if *outcome == MergeOutcome::NoRepository {
            return;
        }
        let base = self
            .store()
            .run_work(run)
            .ok()
            .and_then(|w| w.base_ref)
            .unwrap_or_else(|| "the base branch".to_owned());
        if let Err(e) = self.record_activity(
            run,
            Activity::Merge {
                text: outcome_text(outcome, &base),
                outcome: Some(outcome.clone()),
            },
        ) {
            tracing::warn!(
                run = %run,
                "cannot record the merge in the timeline: {}",
                e.message
            );
        }
    }

    /// Merges, and says how in the run's timeline; a merge that cannot happen
    /// opens a deviation gate with the reason (retry, or stop).
    pub(crate) fn merge_or_deviation(
        &self,
        run: RunId,
        actor: &Actor,
    ) -> Result<MergeOutcome, ApiError> {
        match self.merge_run(run, actor) {
            Ok(outcome) => {
                self.note_merge(run, &outcome);
                Ok(outcome)
            }
            Err(err) => {
                self.open_merge_failed(run, &err)?;
                Err(err)
            }
        }
    }

    /// Records the commit the run's review shows (its branch's latest), and
    /// says if any of its work is already on the base without a merge of
    /// Overseer's. Nothing to do for a run without a repository.
    pub(crate) fn record_review_tip(&self, run: RunId) -> Result<(), ApiError> {
        let work = self.store().run_work(run)?;
        let (Some(branch), Some(dir)) = (&work.branch, &work.worktree) else {
            return Ok(());
        };
        let tip = git::branch_head(Path::new(dir), branch)?;
        let now = self.clock.now();
        self.write(|tx| tx.set_reviewed_tip(run, &tip, now))?;
        if let Err(e) = self.check_unrecorded_merge(run) {
            tracing::warn!(
                run = %run,
                "cannot check the base for the run's commits: {}",
                e.message
            );
        }
        Ok(())
    }

    /// A human's approval of a run waiting for review. Without a co-signing
    /// supervisor the approval decides: the merge first, then the decision
    /// and the run's release in one transaction (a failed merge records
    /// nothing). On a co-signed review the vote is recorded first, and the
    /// merge waits for the supervisor's approval (see [`Engine::review_effect`]).
    pub(crate) fn approve_review(&self, id: RunId, actor: &Actor) -> Result<RunView, ApiError> {
        let run = self.run(id)?;
        // Not waiting for review: the state machine says why.
        let gate = if matches!(run.state, RunState::PendingReview) {
            self.review_gate(id)?
        } else {
            None
        };
        let Some(gate) = gate else {
            return self.approve_recorded(id, actor);
        };
        if gate.decision.is_some() {
            // Decided approve before and not merged (the merge failed, or the
            // engine stopped in between): a retry merges; anything else says
            // who decided what.
            return self.effect_approval(&gate, actor);
        }
        if gate.authority == Some(Autonomy::Cosign) {
            return self.cosign_approval(&gate, actor);
        }
        if let Some(why) = self.second_person_missing(id, Some(gate.id), actor)? {
            return Err(ApiError::new(ErrorCode::Forbidden, why));
        }
        self.merge_or_deviation(id, actor)?;
        self.approve_recorded(id, actor)
    }

    /// The run's latest merge-review gate.
    fn review_gate(&self, run: RunId) -> Result<Option<GateView>, ApiError> {
        Ok(self
            .store()
            .gates(false)?
            .into_iter()
            .filter(|g| g.run_id == run && g.kind() == GateKind::MergeReview)
            .max_by_key(|g| g.id))
    }

    /// A human's approval on a co-signed merge review: a vote. It decides
    /// (and merges) only with the supervisor's approval, before or after.
    fn cosign_approval(&self, gate: &GateView, actor: &Actor) -> Result<RunView, ApiError> {
        let now = self.clock.now();
        let voted = self.write(|tx| {
            tx.decide_gate(
                gate.id,
                GateKind::MergeReview.approve_option(),
                None,
                actor,
                now,
            )
        })?;
        if voted.decision.is_none() {
            self.record_activity(
                gate.run_id,
                Activity::Cosign {
                    gate_id: gate.id,
                    by: overseer_core::device::actor_text(actor),
                    text: format!(
                        "approved by {}; the merge waits for the co-sign of the supervisor",
                        overseer_core::device::actor_text(actor)
                    ),
                },
            )?;
            return self.run(gate.run_id);
        }
        self.effect_approval(&voted, actor)
    }

    /// Acts on a merge review decided approve: marked effected (nobody can
    /// change it any more), merged, and the run released as merged.
    pub(crate) fn effect_approval(
        &self,
        gate: &GateView,
        actor: &Actor,
    ) -> Result<RunView, ApiError> {
        // Files other tools run on their own merge only with a human's
        // approval (the one carrying it out, or a vote of theirs).
        if !self.approved_by_a_human(gate, actor)? {
            if let Some(why) = self.merge_needs_a_human(gate.run_id) {
                return Err(ApiError::new(
                    ErrorCode::Forbidden,
                    format!(
                        "run {} is not merged on {actor}'s approval alone: {why}",
                        gate.run_id
                    ),
                ));
            }
        }
        if let Some(why) = self.second_person_missing(gate.run_id, Some(gate.id), actor)? {
            return Err(ApiError::new(ErrorCode::Forbidden, why));
        }
        let now = self.clock.now();
        let gate = self.write(|tx| tx.mark_effected(gate.id, now))?;
        match &gate.decision {
            Some(d) if d.choice::<MergeReviewChoice>() == Ok(MergeReviewChoice::Approve) => {}
            Some(d) => {
                return Err(ApiError::new(
                    ErrorCode::AlreadyDecided,
                    format!(
                        "run {}'s review was already decided: '{}' by {}",
                        gate.run_id,
                        d.option,
                        d.who_and_when()
                    ),
                ))
            }
            None => {
                return Err(ApiError::new(
                    ErrorCode::InvalidTransition,
                    format!(
                        "run {}'s review has no decision its signed record backs; decide it again",
                        gate.run_id
                    ),
                ))
            }
        }
        self.merge_or_deviation(gate.run_id, actor)?;
        self.transition(gate.run_id, RunEvent::Approve, None, actor)
    }
}

impl Merges {
    /// True when `actor` is a human, or a human voted to approve `gate`.
    fn approved_by_a_human(&self, gate: &GateView, actor: &Actor) -> Result<bool, ApiError> {
        if actor.is_user() {
            return Ok(true);
        }
        let approve = gate.kind().approve_option();
        Ok(self
            .store()
            .decisions_of_gate(gate.id)?
            .iter()
            .any(|d| d.actor.is_user() && d.option.as_deref() == Some(approve)))
    }
}

/// True when a human approved this pending, co-signed gate and it waits for
/// the supervisor's approval (core's resolution of the votes cast so far).
pub(crate) fn awaiting_cosign(gate: &GateView, decisions: &[DecisionRecord]) -> bool {
    if gate.decision.is_some() {
        return false;
    }
    let votes: Vec<Vote> = decisions
        .iter()
        .filter(|d| d.actor.is_user() || matches!(d.actor, Actor::Supervisor(_)))
        .map(|d| Vote {
            actor: d.actor.clone(),
            verdict: d.verdict,
            option: d.option.clone(),
            at: d.at,
        })
        .collect();
    matches!(
        resolve(gate.authority, Some(gate.kind().approve_option()), &votes),
        Resolution::Pending {
            awaiting_cosign: true
        }
    )
}

/// The merge commit a record names, if it is on the base; else the commit
/// on the base's first-parent line that merged `tip`.
fn merge_commit_of(user: &Path, old: &str, tip: &str, m: &MergeRecord) -> Option<String> {
    m.merge_commit
        .clone()
        .filter(|c| git::contains(user, old, c).unwrap_or(false))
        .or_else(|| git::merge_of(user, old, tip).ok().flatten())
}

/// Where a run's merge reads and writes, or None for a run without a
/// repository. The reviewed commit is the one recorded when the run entered
/// review, else (a run from before it was recorded, or not yet in review)
/// the branch's commit now.
fn sides(work: &RunWork) -> Result<Option<Sides>, ApiError> {
    let (Some(branch), Some(base), Some(dir)) = (&work.branch, &work.base_ref, &work.worktree)
    else {
        return Ok(None);
    };
    let repo = PathBuf::from(dir);
    let tip = match &work.reviewed_tip {
        Some(t) => t.clone(),
        None => git::branch_head(&repo, branch)?,
    };
    let from = match &work.base_commit {
        Some(c) => c.clone(),
        None => git::branch_start(&repo, base, branch),
    };
    Ok(Some(Sides {
        user: PathBuf::from(&work.workspace.path),
        repo,
        base: base.clone(),
        branch: branch.clone(),
        from,
        tip,
    }))
}
