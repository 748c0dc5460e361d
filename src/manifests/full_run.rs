//! A run from scratch on every core. Syntax trees cannot leave the thread that parsed them
//! (proc-macro2's spans are thread-bound), so instead of one thread parsing and deriving
//! everything while others only render, each thread parses a share of the files, and the
//! threads swap what every one of them needs to resolve names: each file's [`FilePart`], then
//! the custom resources each found. Every thread then holds an index of the whole crate whose
//! own files are loaded and whose others are parsed on demand, and derives the kinds declared
//! in its files. Derived kinds hold no syntax tree, so any thread renders them, from a shared
//! queue; a thread with nothing to render takes a kind no thread has started. Lint findings
//! are located in the source by the thread that derived the kind: it has the kind's files
//! loaded, where another thread would have to parse them again.
//!
//! The result does not depend on how the work fell: errors and outputs are put in the order of
//! a run on one thread (files, then items, then kinds).
//!
//! The thread that hands in its share last assembles the result and delivers it, before any
//! thread drops its syntax trees and schema definitions and exits. That tidying up takes each
//! thread about as long as a tenth of the corpus's run; the caller no longer waits for it.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Condvar, Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
};

use super::{
    BACKLOG, Finished, Generated, KindMeta, Options, STACK_SIZE, Slot, assemble, cores,
    crd::{self, CustomResource},
    discover::Source,
    error::{ManifestError, SourceError},
    finish, found_resources,
    index::{self, FileBodies, FilePart, FileSet, Index, Structure},
    plan::Recorded,
    render, schema, sort_by_place, transform,
};

/// A kind's result on the thread that took it.
enum Outcome {
    /// Errors deriving its versions: the run reports these first, in kind order.
    Underived(Vec<SourceError>),
    /// Errors rendering it (merging versions, the lint).
    Unrendered(Vec<SourceError>),
    Done(Box<Finished>),
}

/// A custom resource one thread found, as every thread needs it to plan: (item, group, kind,
/// version).
type FoundResource = (usize, String, String, String);

/// One file's custom resources, or the errors in their `#[kube(...)]`.
type FoundInFile = (usize, Result<Vec<FoundResource>, Vec<SourceError>>);

/// A run's result: the CRDs, and with `record` the index structure and the kinds as the cache
/// keeps them.
pub(super) type RunResult = Result<RunOutput, ManifestError>;
type RunOutput = (Generated, Option<(Structure, Recorded)>);

/// Takes a run's result, on whichever of its threads finishes last.
type Deliver<'s> = super::Deliver<'s, RunOutput>;

/// What the threads of a run share.
struct Run<'s> {
    start: Start,
    /// Numbers the threads that take part, so that a kind can go back to the one that derived
    /// it.
    next_thread: AtomicUsize,
    sources: &'s [Source],
    options: &'s Options,
    record: bool,
    /// The files claimed for parsing so far, and how many threads claimed any: those hand in
    /// their parts at each meeting. A thread that starts after every file is claimed (on a
    /// busy machine a new thread can wait milliseconds for a core) only reads the others' parts,
    /// so nobody waits for it.
    claims: Mutex<Claims>,
    /// Each thread's parsed files: their parts, or their syntax errors, by file.
    parsed: Meet<Vec<(usize, Result<FilePart, SourceError>)>>,
    /// Each thread's custom resources, or their `#[kube(...)]` errors, by file.
    found: Meet<Vec<FoundInFile>>,
    /// Per kind: whether a thread has taken it to derive.
    taken: OnceLock<Vec<AtomicBool>>,
    rendering: Rendering,
    /// Set once any kind fails to derive: then only derive errors are reported, and no thread
    /// renders any more.
    underived: AtomicBool,
    shares: Mutex<Shares<'s>>,
}

/// The threads' shares of a run, handed in as each finishes, and where the result goes.
struct Shares<'s> {
    /// How many threads take part: known once every helper is started.
    expected: Option<usize>,
    /// Each share, with whether it is the spawning thread's.
    handed_in: Vec<(bool, Result<Share, ManifestError>)>,
    /// Taken by the thread that completes the shares.
    deliver: Option<Deliver<'s>>,
}

/// Derives and renders every kind of `sources` on up to as many threads as there are cores,
/// each with a stack of `stack` bytes (the one this thread was given for the deepest source),
/// and gives the result to `deliver` as soon as it is complete: this returns only once every
/// thread has tidied up. With `record`, the result holds the index structure and the kinds as
/// the cache keeps them.
pub(super) fn derive_all<'s>(
    sources: &'s [Source],
    options: &'s Options,
    record: bool,
    stack: usize,
    deliver: impl FnOnce(RunResult) + Send + 's,
) {
    // Without a stack of known size (no thread could start), nothing else will start either.
    let threads = if stack == 0 {
        1
    } else {
        let bytes = sources.iter().map(|s| s.text.len()).sum();
        threads_for(super::cores(), bytes)
    };
    derive_on(sources, options, record, stack, threads, Box::new(deliver));
}

/// At most this many threads: each builds an index of the whole crate, keeps a copy of the
/// sources it did not parse, and meets the others twice.
const MAX_THREADS: usize = 8;

/// Source bytes per thread: for less, a thread costs more to start and to index the crate than
/// its share of the parsing saves.
const BYTES_PER_THREAD: usize = 8 << 10;

/// How many threads a run on `cores` cores over `bytes` of source uses.
fn threads_for(cores: usize, bytes: usize) -> usize {
    cores.min(MAX_THREADS).min(bytes / BYTES_PER_THREAD).max(1)
}

/// [`derive_all`] on at most `threads` threads (and no more than there are files).
fn derive_on<'s>(
    sources: &'s [Source],
    options: &'s Options,
    record: bool,
    stack: usize,
    threads: usize,
    deliver: Deliver<'s>,
) {
    let threads = threads.clamp(1, sources.len().max(1));
    let run = Run::new(sources, options, record, deliver);
    // Each thread on a core of its own, this one where it is (see `cores` for why).
    let cores = if threads > 1 {
        cores::Cores::of_this_thread()
    } else {
        cores::Cores::none()
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads)
            .filter_map(|nth| {
                let run = &run;
                let cores = &cores;
                std::thread::Builder::new()
                    .name("kopgen-derive".into())
                    .stack_size(stack.max(STACK_SIZE))
                    .spawn_scoped(scope, move || {
                        let pinned = cores.pin(nth);
                        run.start.ready();
                        run.take_part(false, pinned);
                    })
                    .ok()
            })
            .collect();
        run.expect_shares(handles.len() + 1);
        let pinned = cores.pin(0);
        run.start.go(handles.len());
        run.take_part(true, pinned);
        for handle in handles {
            // A thread that panicked handed in no share: the result is not delivered.
            let _ = handle.join();
        }
    });
    let undelivered = run.shares.lock().ok().and_then(|mut s| s.deliver.take());
    if let Some(deliver) = undelivered {
        deliver(Err(ManifestError::Other("a derive thread panicked".into())));
    }
}

impl Run<'_> {
    /// The run's result from every thread's share.
    fn result(&self, shares: Vec<(bool, Result<Share, ManifestError>)>) -> RunResult {
        let mut mine = None;
        let mut helpers = Vec::new();
        for (spawning, share) in shares {
            if spawning {
                mine = Some(share);
            } else {
                helpers.push(share);
            }
        }
        let Share {
            kinds,
            mut outcomes,
            structure,
        } = mine.ok_or_else(|| {
            ManifestError::Other("the spawning thread handed in nothing".into())
        })??;
        for helper in helpers {
            let share =
                helper.map_err(|_| ManifestError::Other("a derive thread failed".into()))?;
            outcomes.extend(share.outcomes);
        }
        let mut slots: Vec<Option<Outcome>> = (0..kinds).map(|_| None).collect();
        for (position, outcome) in outcomes {
            if let Some(slot) = slots.get_mut(position) {
                *slot = Some(outcome);
            }
        }
        let mut underived = Vec::new();
        let mut unrendered = Vec::new();
        let mut finished = Vec::with_capacity(kinds);
        for slot in slots {
            match slot {
                Some(Outcome::Underived(errors)) => underived.extend(errors),
                Some(Outcome::Unrendered(errors)) => unrendered.extend(errors),
                Some(Outcome::Done(done)) => finished.push(Slot::Derived(done)),
                // Not rendered because another kind failed to derive, or lost.
                None if !self.underived.load(Ordering::Acquire) => {
                    return Err(ManifestError::Other(
                        "a kind was derived but not rendered".into(),
                    ));
                }
                None => {}
            }
        }
        if !underived.is_empty() {
            return Err(ManifestError::Many(underived));
        }
        if !unrendered.is_empty() {
            sort_by_place(&mut unrendered);
            return Err(ManifestError::Many(unrendered));
        }
        let (generated, recorded) = assemble(finished, &[], 0, self.record)?;
        Ok((generated, structure.map(|s| (s, recorded))))
    }

    /// The number of threads that hand in a share.
    fn expect_shares(&self, threads: usize) {
        self.hand_in_with(|shares| shares.expected = Some(threads));
    }

    /// This thread's share; the thread that completes the shares delivers the result.
    fn hand_in(&self, spawning: bool, share: Result<Share, ManifestError>) {
        self.hand_in_with(|shares| shares.handed_in.push((spawning, share)));
    }

    fn hand_in_with(&self, change: impl FnOnce(&mut Shares<'_>)) {
        let complete = {
            let Ok(mut shares) = self.shares.lock() else {
                return;
            };
            change(&mut shares);
            if shares.expected == Some(shares.handed_in.len()) {
                shares
                    .deliver
                    .take()
                    .map(|deliver| (deliver, std::mem::take(&mut shares.handed_in)))
            } else {
                None
            }
        };
        if let Some((deliver, shares)) = complete {
            deliver(self.result(shares));
        }
    }
}

/// One thread's share of a run.
struct Share {
    /// How many kinds the run has.
    kinds: usize,
    outcomes: Vec<(usize, Outcome)>,
    /// The index structure, when the run records it.
    structure: Option<Structure>,
}

impl<'s> Run<'s> {
    fn new(
        sources: &'s [Source],
        options: &'s Options,
        record: bool,
        deliver: Deliver<'s>,
    ) -> Self {
        Self {
            start: Start::default(),
            next_thread: AtomicUsize::new(0),
            sources,
            options,
            record,
            claims: Mutex::new(Claims::default()),
            parsed: Meet::new(),
            found: Meet::new(),
            taken: OnceLock::new(),
            rendering: Rendering::new(),
            underived: AtomicBool::new(false),
            shares: Mutex::new(Shares {
                expected: None,
                handed_in: Vec::new(),
                deliver: Some(deliver),
            }),
        }
    }

    /// This thread's part of the run (the spawning thread's, with `spawning`), handed in once
    /// done, before the thread drops what it built. A thread `pinned` to a core stays there
    /// until every file is parsed, which is where the cores have to be shared out at once;
    /// after that it goes wherever the scheduler puts it.
    fn take_part(&self, spawning: bool, pinned: Option<cores::Pinned>) {
        if let Err(e) = self.part(spawning, pinned) {
            self.hand_in(spawning, Err(e));
        }
    }

    /// Parse, swap parts, find custom resources, swap them, then derive and render kinds until
    /// none is left, and hand in the share. Errors in the sources are returned by every thread
    /// alike; the run reports those of the spawning thread.
    fn part(&self, spawning: bool, pinned: Option<cores::Pinned>) -> Result<(), ManifestError> {
        // Whatever way this thread leaves, nobody waits for it any longer.
        let leave = Leave {
            run: self,
            participant: std::cell::Cell::new(false),
            done: std::cell::Cell::new(false),
        };
        let me = self.next_thread.fetch_add(1, Ordering::Relaxed);
        let mut own: Vec<(usize, FileBodies)> = Vec::new();
        let mut parts = Vec::new();
        while let Some(file) = self.claim(&leave.participant) {
            let Some(source) = self.sources.get(file) else {
                break;
            };
            match index::parse_part(&source.path, &source.module, &source.text, file) {
                Ok((part, bodies)) => {
                    parts.push((file, Ok(part)));
                    own.push((file, bodies));
                }
                Err(e) => parts.push((file, Err(e))),
            }
        }
        let participant = leave.participant.get();
        let all = self.parsed.meet(participant, parts).ok_or_else(stopped)?;
        drop(pinned);
        let parsed = by_file(&all);
        let errors: Vec<SourceError> = parsed
            .iter()
            .filter_map(|(_, part)| part.as_ref().err().cloned())
            .collect();
        if !errors.is_empty() {
            return Err(ManifestError::Many(errors));
        }
        let parts: Vec<&FilePart> = parsed.iter().filter_map(|(_, p)| p.as_ref().ok()).collect();
        let owned: Vec<bool> = {
            let mut owned = vec![false; self.sources.len()];
            for (file, _) in &own {
                owned[*file] = true;
            }
            owned
        };
        let texts = self
            .sources
            .iter()
            .zip(&owned)
            .map(|(source, &owned)| {
                if owned {
                    (String::new(), String::new())
                } else {
                    (source.module.clone(), source.text.clone())
                }
            })
            .collect();
        let index = Index::from_parts(&parts, texts, own).ok_or_else(stopped)?;
        drop(parts);
        drop(parsed);
        drop(all);

        // The custom resources of this thread's files, then everyone's.
        let mut resources: HashMap<usize, CustomResource> = HashMap::new();
        let mut found = Vec::new();
        for (file, _) in owned.iter().enumerate().filter(|(_, owned)| **owned) {
            found.push((
                file,
                found_resources(&index, index.items_of(file)).map(|crs| {
                    crs.into_iter()
                        .map(|cr| {
                            let described = (
                                cr.item,
                                cr.group().to_owned(),
                                cr.kind().to_owned(),
                                cr.version().to_owned(),
                            );
                            resources.insert(cr.item, cr);
                            described
                        })
                        .collect()
                }),
            ));
        }
        let all = self.found.meet(participant, found).ok_or_else(stopped)?;
        let mut errors = Vec::new();
        let mut described = Vec::new();
        for (_, found) in by_file(&all) {
            match found {
                Ok(crs) => described.extend(crs.iter()),
                Err(e) => errors.extend(e.iter().cloned()),
            }
        }
        if !errors.is_empty() {
            return Err(ManifestError::Many(errors));
        }
        let kinds = plan(described);
        drop(all);

        let taken = self
            .taken
            .get_or_init(|| kinds.iter().map(|_| AtomicBool::new(false)).collect());
        if taken.len() != kinds.len() {
            return Err(stopped());
        }
        self.rendering.expect(kinds.len());
        // This thread derives the kinds declared in its files (loaded here), and any thread
        // renders what was derived. A thread with nothing of its own left renders; only when
        // nothing waits to be rendered does it take a kind no thread has started (see
        // `steal`).
        let first_file = |items: &[usize]| {
            items
                .first()
                .and_then(|&item| index.items.get(item))
                .map(|item| item.file)
        };
        let mut own_kinds =
            (0..kinds.len()).filter(|&k| first_file(&kinds[k]).is_some_and(|f| owned[f]));
        let mut builder = schema::Builder::new(&index);
        let mut transforms = transform::Transforms::default();
        let mut outcomes = Vec::new();
        // The custom resources of each kind this thread derived and has not finished.
        let mut derived: HashMap<usize, Vec<CustomResource>> = HashMap::new();
        let mut derive =
            |position: usize,
             outcomes: &mut Vec<(usize, Outcome)>,
             derived: &mut HashMap<usize, Vec<CustomResource>>| {
                match self.derive_kind(
                    me,
                    &index,
                    &mut builder,
                    &mut resources,
                    position,
                    &kinds[position],
                ) {
                    Ok((job, versions)) => {
                        derived.insert(position, versions);
                        self.rendering.push(job);
                    }
                    Err(errors) => {
                        outcomes.push((position, Outcome::Underived(errors)));
                        self.rendering.skip();
                    }
                }
            };
        loop {
            if let Some(position) = own_kinds.find(|&k| !taken[k].swap(true, Ordering::AcqRel)) {
                derive(position, &mut outcomes, &mut derived);
                // Hand on what waits when the others are behind with rendering.
                if let Some(job) = self.rendering.surplus() {
                    outcomes.extend(self.render_job(
                        me,
                        &index,
                        &mut transforms,
                        &mut derived,
                        job,
                    ));
                }
                continue;
            }
            if let Some(job) = self
                .rendering
                .next(me, || self.steal(&index, &kinds, taken))
            {
                match job {
                    Next::Locate(job) => {
                        outcomes.push(self.locate_job(me, &index, &mut derived, *job));
                    }
                    Next::Render(job) => {
                        outcomes.extend(self.render_job(
                            me,
                            &index,
                            &mut transforms,
                            &mut derived,
                            *job,
                        ));
                    }
                    Next::Derive(position) => derive(position, &mut outcomes, &mut derived),
                }
                continue;
            }
            break;
        }
        leave.done.set(true);
        self.hand_in(
            spawning,
            Ok(Share {
                kinds: kinds.len(),
                outcomes,
                structure: self.record.then(|| index.structure()),
            }),
        );
        Ok(())
    }

    /// A kind no thread has started, now this one's: one whose files this thread has at hand
    /// if there is any, else the one whose file is the smallest to parse again.
    fn steal(&self, index: &Index, kinds: &[Vec<usize>], taken: &[AtomicBool]) -> Option<usize> {
        let cost = |k: usize| {
            let items = &kinds[k];
            if items.iter().all(|&item| index.is_loaded(item)) {
                return 0;
            }
            items
                .iter()
                .filter_map(|&item| index.items.get(item))
                .filter_map(|item| self.sources.get(item.file))
                .map(|source| source.text.len())
                .sum::<usize>()
                .max(1)
        };
        loop {
            let k = (0..taken.len())
                .filter(|&k| !taken[k].load(Ordering::Acquire))
                .min_by_key(|&k| cost(k))?;
            if !taken[k].swap(true, Ordering::AcqRel) {
                return Some(k);
            }
        }
    }

    /// Derives the kind whose versions are the structs `items`, for any thread to render.
    fn derive_kind(
        &self,
        me: usize,
        index: &Index,
        builder: &mut schema::Builder,
        resources: &mut HashMap<usize, CustomResource>,
        position: usize,
        items: &[usize],
    ) -> Result<(DerivedKind, Vec<CustomResource>), Vec<SourceError>> {
        let mut versions = Vec::with_capacity(items.len());
        for &item in items {
            match resources.remove(&item) {
                Some(cr) => versions.push(cr),
                // Declared in a file another thread parsed: read here.
                None => versions.extend(found_resources(index, item..item + 1)?),
            }
        }
        index.take_touched();
        let mut derived = Vec::with_capacity(versions.len());
        let mut errors = Vec::new();
        for cr in &versions {
            match crd::single_version_crd(builder, index, cr) {
                Ok(d) => derived.push(d),
                Err(e) => errors.push(e),
            }
        }
        let deps = index.take_touched();
        if !errors.is_empty() {
            self.underived.store(true, Ordering::Release);
            return Err(errors);
        }
        let meta = KindMeta::of(&versions);
        Ok((
            DerivedKind {
                job: render::Job {
                    position,
                    versions: derived,
                },
                owner: me,
                meta,
                deps,
            },
            versions,
        ))
    }

    /// Renders a derived kind. Its findings are located by the thread that derived it (`owner`,
    /// whose `derived` hold its custom resources): when that is another thread, the kind goes
    /// back to it and there is no outcome here.
    fn render_job(
        &self,
        me: usize,
        index: &Index,
        transforms: &mut transform::Transforms,
        derived: &mut HashMap<usize, Vec<CustomResource>>,
        kind: DerivedKind,
    ) -> Option<(usize, Outcome)> {
        let DerivedKind {
            job,
            owner,
            meta,
            deps,
        } = kind;
        let position = job.position;
        let mine = if owner == me {
            derived.remove(&position)
        } else {
            None
        };
        let outcome = if self.underived.load(Ordering::Acquire) {
            // The run fails with derive errors: rendering is wasted.
            Outcome::Unrendered(Vec::new())
        } else {
            match render::render(job, transforms, self.options) {
                Ok(rendered) => {
                    let kind = Unlocated {
                        meta,
                        deps,
                        rendered,
                    };
                    if kind.rendered.findings.is_empty() {
                        self.done(index, &[], kind)
                    } else if owner == me {
                        let versions = mine.unwrap_or_else(|| self.versions_of(index, &kind.meta));
                        self.done(index, &versions, kind)
                    } else {
                        self.rendering.hand_back(owner, kind);
                        return None;
                    }
                }
                Err(errors) => Outcome::Unrendered(errors),
            }
        };
        self.rendering.finished(owner);
        Some((position, outcome))
    }

    /// Locates the findings of a kind this thread derived and another rendered.
    fn locate_job(
        &self,
        me: usize,
        index: &Index,
        derived: &mut HashMap<usize, Vec<CustomResource>>,
        kind: Unlocated,
    ) -> (usize, Outcome) {
        let position = kind.rendered.position;
        let versions = derived
            .remove(&position)
            .unwrap_or_else(|| self.versions_of(index, &kind.meta));
        let outcome = self.done(index, &versions, kind);
        self.rendering.finished(me);
        (position, outcome)
    }

    /// A rendered kind with its findings located in `versions` (none needed without findings).
    fn done(&self, index: &Index, versions: &[CustomResource], kind: Unlocated) -> Outcome {
        Outcome::Done(Box::new(finish(
            index,
            versions,
            &kind.meta,
            &kind.deps,
            kind.rendered,
            self.record,
        )))
    }

    /// The custom resources of a kind's versions, read from the index.
    fn versions_of(&self, index: &Index, meta: &KindMeta) -> Vec<CustomResource> {
        meta.versions
            .iter()
            .filter_map(|&(item, _)| found_resources(index, item..item + 1).ok())
            .flatten()
            .collect()
    }
}

/// A kind derived on one thread, to be rendered on any.
struct DerivedKind {
    job: render::Job,
    /// The thread that derived it.
    owner: usize,
    meta: KindMeta,
    /// The files its derivation read.
    deps: FileSet,
}

/// A kind rendered with findings by a thread other than the one that derived it, going back
/// to that one to locate them.
struct Unlocated {
    meta: KindMeta,
    deps: FileSet,
    rendered: render::Rendered,
}

/// What a thread does next once its own kinds are derived.
enum Next {
    /// Locate the findings of a kind this thread derived.
    Locate(Box<Unlocated>),
    Render(Box<DerivedKind>),
    /// A kind no thread had started, now this thread's to derive.
    Derive(usize),
}

/// Derived kinds waiting to be rendered, and how many kinds are still to be derived: a thread
/// with nothing to do waits here until either changes.
struct Rendering(Watched<Waiting>);

#[derive(Default)]
struct Waiting {
    jobs: std::collections::VecDeque<DerivedKind>,
    /// By thread: the kinds it derived that are not finished yet, and those rendered elsewhere
    /// that wait for it to locate their findings. A thread leaves only once both are done.
    owners: Vec<Owned>,
    /// Kinds not derived yet (set once the plan is known).
    to_derive: Option<usize>,
    /// A thread left early: nobody waits any longer.
    abandoned: bool,
}

#[derive(Default)]
struct Owned {
    unfinished: usize,
    handed_back: std::collections::VecDeque<Unlocated>,
}

impl Waiting {
    fn owned(&mut self, thread: usize) -> &mut Owned {
        if self.owners.len() <= thread {
            self.owners.resize_with(thread + 1, Owned::default);
        }
        &mut self.owners[thread]
    }
}

impl Rendering {
    fn new() -> Self {
        Self(Watched::new(Waiting::default()))
    }

    /// The run has `kinds` kinds (every thread plans the same).
    fn expect(&self, kinds: usize) {
        self.0.update(|state| {
            state.to_derive.get_or_insert(kinds);
        });
    }

    /// A derived kind, for any thread to render.
    fn push(&self, job: DerivedKind) {
        self.0.update(|state| {
            state.owned(job.owner).unfinished += 1;
            state.jobs.push_back(job);
            state.to_derive = state.to_derive.map(|n| n.saturating_sub(1));
        });
    }

    /// A kind failed to derive: there is nothing to render for it.
    fn skip(&self) {
        self.0.update(|state| {
            state.to_derive = state.to_derive.map(|n| n.saturating_sub(1));
        });
    }

    fn abandon(&self) {
        self.0.update(|state| state.abandoned = true);
    }

    /// A kind that thread `owner` derived is finished.
    fn finished(&self, owner: usize) {
        self.0.update(|state| {
            let owned = state.owned(owner);
            owned.unfinished = owned.unfinished.saturating_sub(1);
        });
    }

    /// A kind rendered here goes back to the thread that derived it.
    fn hand_back(&self, owner: usize, kind: Unlocated) {
        self.0
            .update(|state| state.owned(owner).handed_back.push_back(kind));
    }

    /// A job, if more than [`BACKLOG`] wait.
    fn surplus(&self) -> Option<DerivedKind> {
        self.0
            .update(|state| {
                if state.jobs.len() > BACKLOG {
                    state.jobs.pop_front()
                } else {
                    None
                }
            })
            .flatten()
    }

    /// For thread `me`: a kind of its own handed back, else the next job, else a kind `steal`
    /// takes, else (once every kind is derived and rendered or being rendered, and those `me`
    /// derived are finished) `None`; waits while other threads are still at work.
    fn next(&self, me: usize, steal: impl Fn() -> Option<usize>) -> Option<Next> {
        self.0
            .wait_for(|state| {
                if state.abandoned {
                    return Some(None);
                }
                if let Some(kind) = state.owned(me).handed_back.pop_front() {
                    return Some(Some(Next::Locate(Box::new(kind))));
                }
                if let Some(job) = state.jobs.pop_front() {
                    return Some(Some(Next::Render(Box::new(job))));
                }
                if let Some(position) = steal() {
                    return Some(Some(Next::Derive(position)));
                }
                (state.to_derive.is_none_or(|n| n == 0) && state.owned(me).unfinished == 0)
                    .then_some(None)
            })
            .flatten()
    }
}

/// State that threads wait on. Changes are counted, so that a waiter can spin before it sleeps
/// (see [`spin_while`]).
struct Watched<S> {
    state: Mutex<S>,
    changed: Condvar,
    changes: AtomicU64,
}

impl<S> Watched<S> {
    fn new(state: S) -> Self {
        Self {
            state: Mutex::new(state),
            changed: Condvar::new(),
            changes: AtomicU64::new(0),
        }
    }

    /// Changes the state and wakes whoever waits on it.
    fn update<R>(&self, change: impl FnOnce(&mut S) -> R) -> Option<R> {
        let mut state = self.state.lock().ok()?;
        let result = change(&mut state);
        self.changes.fetch_add(1, Ordering::Release);
        self.changed.notify_all();
        Some(result)
    }

    /// Waits until `ready` gives a result; `None` if the lock is poisoned.
    fn wait_for<R>(&self, mut ready: impl FnMut(&mut S) -> Option<R>) -> Option<R> {
        let mut state = self.state.lock().ok()?;
        loop {
            if let Some(result) = ready(&mut state) {
                return Some(result);
            }
            let seen = self.changes.load(Ordering::Acquire);
            drop(state);
            spin_while(&self.changes, seen);
            state = self.state.lock().ok()?;
            // Changes are made under the lock: if none came, none can come before `wait`
            // releases it.
            if self.changes.load(Ordering::Acquire) == seen {
                state = self.changed.wait(state).ok()?;
            }
        }
    }
}

/// Every kind, as (group, kind) in order, each with its versions' items in the order
/// `merge_crds` takes them: by Kubernetes version priority, then by item.
fn plan<'a>(found: impl IntoIterator<Item = &'a FoundResource>) -> Vec<Vec<usize>> {
    let mut found: Vec<&FoundResource> = found.into_iter().collect();
    found.sort_by_key(|f| f.0);
    let mut kinds: BTreeMap<(&str, &str), Vec<(usize, &str)>> = BTreeMap::new();
    for (item, group, kind, version) in found {
        kinds
            .entry((group, kind))
            .or_default()
            .push((*item, version));
    }
    kinds
        .into_values()
        .map(|mut versions| {
            versions.sort_by_key(|(_, version)| crd::version_priority(version));
            versions.into_iter().map(|(item, _)| item).collect()
        })
        .collect()
}

/// Every thread's parts of a meeting, in file order.
fn by_file<P>(all: &[Vec<(usize, P)>]) -> Vec<&(usize, P)> {
    let mut parts: Vec<_> = all.iter().flatten().collect();
    parts.sort_by_key(|(file, _)| *file);
    parts
}

fn stopped() -> ManifestError {
    ManifestError::Other("a derive thread stopped before the others".into())
}

/// How helper threads begin. A new thread starts on the core of the thread that spawned it,
/// and while that thread is busy it may wait there for milliseconds (about 3 ms measured on a
/// 2-core VM) before the scheduler moves it to an idle core. So each helper first runs while
/// the spawning thread waits for it, and then waits itself: woken from waiting, a thread is
/// placed on an idle core at once.
#[derive(Default)]
struct Start {
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Start {
    /// A helper is running: it tells the spawning thread, then waits for the word to go.
    fn ready(&self) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.0 += 1;
        self.changed.notify_all();
        while !state.1 {
            match self.changed.wait(state) {
                Ok(next) => state = next,
                Err(_) => return,
            }
        }
    }

    /// Waits (a few milliseconds at most) until `helpers` are running, then lets them go.
    fn go(&self, helpers: usize) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(5);
        while state.0 < helpers {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            match self.changed.wait_timeout(state, left) {
                Ok((next, _)) => state = next,
                Err(_) => return,
            }
        }
        state.1 = true;
        self.changed.notify_all();
    }
}

/// Files claimed so far, and the threads that claimed any.
#[derive(Default)]
struct Claims {
    next: usize,
    participants: usize,
}

impl Run<'_> {
    /// The next file for this thread to parse, if any is left; the first claim makes the thread
    /// a participant of the meetings. Once every file is claimed, the number of participants is
    /// final, and the meetings learn it.
    fn claim(&self, participant: &std::cell::Cell<bool>) -> Option<usize> {
        let mut claims = self.claims.lock().ok()?;
        if claims.next < self.sources.len() {
            if !participant.get() {
                participant.set(true);
                claims.participants += 1;
            }
            claims.next += 1;
            return Some(claims.next - 1);
        }
        let participants = claims.participants;
        drop(claims);
        self.parsed.expect(participants);
        self.found.expect(participants);
        None
    }
}

/// Releases the other threads from every meeting this one has not come to, when it leaves.
struct Leave<'r, 's> {
    run: &'r Run<'s>,
    /// Whether the others wait for this thread at the meetings.
    participant: std::cell::Cell<bool>,
    /// Whether it did its part: then nobody waits for it anyway.
    done: std::cell::Cell<bool>,
}

impl Drop for Leave<'_, '_> {
    fn drop(&mut self) {
        if !self.done.get() {
            self.run.rendering.abandon();
        }
        if self.participant.get() {
            self.run.parsed.abandon();
            self.run.found.abandon();
        }
    }
}

/// A point where every participating thread of a run hands in its part of one phase and waits
/// for the others'. The number of participants is set once it is known ([`Meet::expect`]);
/// other threads only read the parts ([`Meet::observe`]).
struct Meet<T>(Watched<Meeting<T>>);

struct Meeting<T> {
    expected: Option<usize>,
    parts: Vec<T>,
    /// Everyone's parts, once all are in.
    done: Option<Arc<Vec<T>>>,
    /// A thread left without handing in its part.
    abandoned: bool,
}

impl<T> Meet<T> {
    fn new() -> Self {
        Self(Watched::new(Meeting {
            expected: None,
            parts: Vec::new(),
            done: None,
            abandoned: false,
        }))
    }

    fn expect(&self, threads: usize) {
        self.0.update(|state| {
            state.expected = Some(threads);
            state.complete();
        });
    }

    fn abandon(&self) {
        self.0.update(|state| {
            if state.done.is_none() {
                state.abandoned = true;
            }
        });
    }

    /// Every participant's part once all are in, handing in `part` first if this thread is
    /// a participant; `None` if a participant left.
    fn meet(&self, participant: bool, part: T) -> Option<Arc<Vec<T>>> {
        if participant {
            self.arrive(part)
        } else {
            self.observe()
        }
    }

    /// Hands in `part`; returns every thread's once all are in, or `None` if a thread left.
    fn arrive(&self, part: T) -> Option<Arc<Vec<T>>> {
        self.0.update(|state| {
            state.parts.push(part);
            state.complete();
        })?;
        self.observe()
    }

    /// Every participant's part, once all are in, or `None` if a participant left.
    fn observe(&self) -> Option<Arc<Vec<T>>> {
        self.0
            .wait_for(|state| {
                if let Some(done) = &state.done {
                    return Some(Some(Arc::clone(done)));
                }
                state.abandoned.then_some(None)
            })
            .flatten()
    }
}

impl<T> Meeting<T> {
    fn complete(&mut self) {
        if self.done.is_none() && self.expected == Some(self.parts.len()) {
            self.done = Some(Arc::new(std::mem::take(&mut self.parts)));
        }
    }
}

/// How long a waiting thread spins before it sleeps.
const SPIN: std::time::Duration = std::time::Duration::from_millis(3);

/// Spins, yielding, for up to [`SPIN`] while `changes` is still `seen`. A thread that sleeps is
/// often woken on the core of the thread that wakes it, where it waits milliseconds for the
/// scheduler to move one of them to the idle core (measured on a 2-core VM: the work of a run
/// fell to one core about half the time). The waits in a run are short, and a thread that
/// keeps its core does not lose it; yielding hands the core over when another thread shares it.
fn spin_while(changes: &AtomicU64, seen: u64) {
    let start = std::time::Instant::now();
    while changes.load(Ordering::Acquire) == seen && start.elapsed() < SPIN {
        std::hint::spin_loop();
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests::discover;

    fn run(sources: &[Source], threads: usize) -> Result<(Vec<String>, Vec<String>), String> {
        let options = Options {
            lint: true,
            max_desc_len: None,
        };
        let result = Mutex::new(None);
        derive_on(
            sources,
            &options,
            true,
            STACK_SIZE,
            threads,
            Box::new(|r| *result.lock().expect("result") = Some(r)),
        );
        result
            .into_inner()
            .expect("result")
            .expect("delivered")
            .map(|(generated, recorded)| {
                let mut outputs: Vec<String> = generated
                    .outputs
                    .iter()
                    .map(|o| format!("{}\n{}", o.path.display(), o.contents))
                    .collect();
                outputs.extend(generated.findings.iter().map(ToString::to_string));
                let kinds = recorded
                    .map(|(_, recorded)| {
                        recorded
                            .kinds
                            .iter()
                            .map(|k| format!("{} {:?} {} {}", k.kind, k.versions, k.start, k.len))
                            .collect()
                    })
                    .unwrap_or_default();
                (outputs, kinds)
            })
            .map_err(|e| e.to_string())
    }

    fn corpus() -> Vec<Source> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds");
        discover::sources(&[dir]).expect("fixture corpus")
    }

    /// However the files and kinds fall to threads, the output, the findings and what the
    /// cache records are those of one thread.
    #[test]
    fn output_does_not_depend_on_the_number_of_threads() {
        let sources = corpus();
        let one = run(&sources, 1);
        assert!(one.as_ref().is_ok_and(|(outputs, _)| outputs.len() > 60));
        for threads in [2, 3, 5, 64] {
            assert_eq!(run(&sources, threads), one, "{threads} threads");
        }
    }

    /// A thread with nothing to render first takes kinds whose files it has at hand, then the
    /// one with the smallest file to parse again.
    #[test]
    fn stealing_prefers_kinds_that_cost_no_parse() {
        let kind = |name: &str, padding: usize| {
            format!(
                "#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]\n\
                 #[kube(group = \"g\", version = \"v1\", kind = \"{name}\")]\n\
                 pub struct {name}Spec {{ pub a: u32 }}\n{}",
                "// padding\n".repeat(padding)
            )
        };
        let sources: Vec<Source> = [("big", 50), ("loaded", 90), ("small", 1)]
            .iter()
            .map(|(name, padding)| Source {
                path: format!("src/{name}.rs").into(),
                module: format!("crate::{name}"),
                text: kind(
                    &heck::ToUpperCamelCase::to_upper_camel_case(*name),
                    *padding,
                ),
            })
            .collect();
        let mut parts = Vec::new();
        let mut own = Vec::new();
        for (file, source) in sources.iter().enumerate() {
            let (part, bodies) =
                index::parse_part(&source.path, &source.module, &source.text, file)
                    .expect("parses");
            parts.push(part);
            if file == 1 {
                own.push((file, bodies));
            }
        }
        let texts = sources
            .iter()
            .enumerate()
            .map(|(file, s)| match file {
                1 => (String::new(), String::new()),
                _ => (s.module.clone(), s.text.clone()),
            })
            .collect();
        let index =
            Index::from_parts(&parts.iter().collect::<Vec<_>>(), texts, own).expect("index");
        let spec = |name: &str| {
            index
                .items
                .iter()
                .position(|item| item.name == name)
                .expect("spec struct")
        };
        let kinds = vec![
            vec![spec("BigSpec")],
            vec![spec("LoadedSpec")],
            vec![spec("SmallSpec")],
        ];
        let taken: Vec<AtomicBool> = kinds.iter().map(|_| AtomicBool::new(false)).collect();
        let options = Options::default();
        let run = Run::new(&sources, &options, false, Box::new(|_| {}));
        let order: Vec<Option<usize>> = (0..4).map(|_| run.steal(&index, &kinds, &taken)).collect();
        assert_eq!(order, [Some(1), Some(2), Some(0), None]);
    }

    #[test]
    fn threads_follow_cores_and_source_size() {
        assert_eq!(threads_for(2, 90 << 10), 2);
        assert_eq!(threads_for(1, 90 << 10), 1);
        assert_eq!(threads_for(64, 5 << 20), MAX_THREADS);
        assert_eq!(threads_for(64, 20 << 10), 2);
        assert_eq!(threads_for(8, 4 << 10), 1);
        assert_eq!(threads_for(0, 0), 1);
    }

    /// A thread that starts after every file is claimed reads the others' parts without
    /// holding anyone up, and finds no kind left to take.
    #[test]
    fn a_thread_that_starts_late_only_observes() {
        let sources = corpus();
        let options = Options::default();
        // With no number of shares expected, the shares stay handed in, for this test to read.
        let run = Run::new(&sources, &options, false, Box::new(|_| {}));
        run.take_part(true, None);
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(STACK_SIZE)
                .spawn_scoped(scope, || run.take_part(false, None))
                .map(|handle| handle.join())
        })
        .expect("thread starts")
        .expect("thread ends");
        let shares = std::mem::take(&mut run.shares.lock().expect("shares").handed_in);
        let [(true, Ok(first)), (false, Ok(late))] = &shares[..] else {
            panic!("two shares, both done");
        };
        assert!(first.outcomes.len() > 60);
        assert!(late.outcomes.is_empty() && late.kinds > 60);
    }

    /// Errors are reported in the order of a run on one thread, at every stage: syntax
    /// errors by file, `#[kube(...)]` errors by item, derive errors by kind.
    #[test]
    fn errors_do_not_depend_on_the_number_of_threads() {
        let source = |name: &str, text: &str| Source {
            path: format!("src/{name}.rs").into(),
            module: format!("crate::{name}"),
            text: text.to_owned(),
        };
        let kind = |group: &str, body: &str| {
            format!(
                "#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]\n\
                 #[kube(group = \"{group}\", version = \"v1\", kind = \"K{group}\")]\n\
                 pub struct K{group}Spec {{ {body} }}\n"
            )
        };
        // Eight files, `m0.rs` to `m7.rs`, the text of each by its number.
        let files = |text: &dyn Fn(usize) -> String| -> Vec<Source> {
            (0..8).map(|i| source(&format!("m{i}"), &text(i))).collect()
        };
        let broken_syntax = files(&|i| match i % 3 {
            0 => format!("pub struct Broken{i} {{"),
            _ => kind(&format!("g{i}"), "pub a: u32"),
        });
        let broken_attrs = files(&|i| match i % 2 {
            0 => format!(
                "#[derive(CustomResource)]\n#[kube(group = \"g{i}\", version = 3)]\npub struct S{i}Spec {{}}\n"
            ),
            _ => kind(&format!("g{i}"), "pub a: u32"),
        });
        // Kinds sort in the opposite order to files.
        let broken_types = files(&|i| match i % 2 {
            1 => kind(&format!("g{}", 7 - i), &format!("pub a: Missing{i}")),
            _ => kind(&format!("g{}", 7 - i), "pub a: u32"),
        });
        // The same version of a kind declared in two files: an error while rendering.
        let twice = files(&|i| kind(&format!("g{}", i % 3), "pub a: u32"));
        for sources in [broken_syntax, broken_attrs, broken_types, twice] {
            let one = run(&sources, 1);
            let errors = one.as_ref().expect_err("the sources are broken");
            assert!(errors.lines().count() >= 3, "{errors}");
            for threads in [2, 3, 8] {
                assert_eq!(run(&sources, threads), one, "{threads} threads");
            }
        }
    }
}
