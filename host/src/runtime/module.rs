//! A loaded guest module: its kind spec and a pre-linked instance, from
//! which every call gets a fresh store so no state leaks between passes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use reconciler_conventions::kind::{KindRef, KindSpec, ParentGates};
use reconciler_conventions::projection::{FieldPath, Projection};
use reconciler_conventions::verdict::Verdict;
use wasmtime::component::Component;
use wasmtime::{Store, Trap};
use wasmtime_wasi::{WasiCtxView, WasiView};

use super::deadline::{Deadline, DeadlineExceeded};
use super::error::{GuestError, GuestErrorClass, LoadError};
use super::limits::{MemoryCapExceeded, MemoryLimiter};
use super::sandbox::{self, Sandbox, SandboxView, Seed};
use super::slots::{InstanceSlot, InstanceSlots};
use super::{Runtime, artifacts};
use crate::contract::exports::{
    Change as WitChange, Evaluation, KindSpec as WitKindSpec, Verdict as WitVerdict,
};
use crate::contract::model;
use crate::contract::model::{Change, Withdrawal};
use crate::contract::types::{KindRef as WitKindRef, Object};
use crate::contract::version::{self, ContractVersion};
use crate::contract::{convert as twin, older_kind_spec, v0_1, v0_2, v0_3, v0_4, v0_5, v0_6};
use crate::facts::meta::object_meta;
use crate::facts::past_cache::ObjectKey;
use crate::facts::source::ChildKey;
use crate::facts::{ChangeState, Dependency, FactServer, MemorySource, ObjectSource, SourceError};

/// The store data of one call.
pub struct PassState {
    pub(crate) facts: FactServer,
    limiter: MemoryLimiter,
    sandbox: Sandbox,
}

impl WasiView for PassState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.sandbox.view()
    }
}

impl SandboxView for PassState {
    fn sandbox(&mut self) -> &mut Sandbox {
        &mut self.sandbox
    }
}

/// A guest module, ready to evaluate.
#[derive(Clone)]
pub struct Module {
    name: String,
    digest: String,
    spec: Arc<KindSpec>,
    /// The kinds the spec declares it reads, built once for every pass.
    declared: Arc<BTreeSet<KindRef>>,
    /// Those of them it reads as optional.
    optional: Arc<BTreeSet<KindRef>>,
    /// Those of them it may read in other namespaces than the parent's.
    across: Arc<BTreeSet<KindRef>>,
    /// What it is served of those whose reads name their fields.
    projections: Arc<BTreeMap<KindRef, Projection>>,
    contract: ContractVersion,
    pre: Pre,
    engine: wasmtime::Engine,
    slots: Arc<InstanceSlots>,
    memory_bytes: usize,
    deadline: Deadline,
    from_cache: bool,
}

/// The pre-linked instance, of the contract version the module exports.
#[derive(Clone)]
enum Pre {
    V0_1(v0_1::GuestPre<PassState>),
    V0_2(v0_2::GuestPre<PassState>),
    V0_3(v0_3::GuestPre<PassState>),
    V0_4(v0_4::GuestPre<PassState>),
    V0_5(v0_5::GuestPre<PassState>),
    V0_6(v0_6::GuestPre<PassState>),
}

/// One evaluation's input.
pub struct EvaluateRequest<'a> {
    /// The parent object as JSON.
    pub parent: &'a serde_json::Value,
    pub paused: bool,
    /// The operator's settings for the kind.
    pub settings: &'a [(String, String)],
    /// Where the facts come from.
    pub source: Arc<dyn ObjectSource>,
    pub now: jiff::Timestamp,
}

/// What one evaluation produced: the verdict or the error, and what the
/// pass read (recorded even when it failed, so a change can retry it).
pub struct Evaluated {
    pub outcome: Result<Verdict, GuestError>,
    /// The changes the guest asked for, checked against what its kind
    /// declares it writes (empty when the outcome is an error).
    pub changes: Vec<Change>,
    /// The withdrawals among them (contract 0.5.0): deletions that take
    /// access or exposure away, made whatever holds the others.
    pub withdrawals: Vec<Withdrawal>,
    pub reads: BTreeSet<Dependency>,
    /// A read that fails the pass whatever the verdict says: any read the
    /// source could not serve but an optional kind not served or refused
    /// (`FactServer::read_error`).
    pub failed_read: Option<SourceError>,
    /// The objects the cache refused that the host is to read past it
    /// before evaluating the pass again (`crate::facts::past_cache`).
    pub past_cache_wanted: BTreeSet<ObjectKey>,
    /// The change states the guest read (`facts.change-state`), with the
    /// answers it got: the pass evaluates again when its changes answer
    /// otherwise.
    pub change_states: BTreeMap<ChildKey, Option<ChangeState>>,
}

/// Whether `import` is a contract import the host provides: `types` or
/// `facts` of a version it serves, any patch of it (the WASI ones are
/// [`sandbox::PROVIDED`]).
fn contract_import(import: &str) -> bool {
    ContractVersion::SERVED.iter().any(|v| {
        let version = v.as_str();
        let series = &version[..=version.rfind('.').unwrap_or(0)];
        ["reconciler:guest/types@", "reconciler:guest/facts@"]
            .iter()
            .any(|interface| import.starts_with(&format!("{interface}{series}")))
    })
}

/// Refuses, before anything is compiled, a component importing what the
/// host does not link: a contract version it does not serve (a world
/// mismatch), or any other interface (every one named at once).
fn check_imports(name: &str, bytes: &[u8]) -> Result<(), LoadError> {
    let imports = sandbox::imports(bytes).map_err(|e| LoadError::NotAComponent {
        guest: name.to_owned(),
        detail: format!("{e}"),
    })?;
    check_import_names(name, imports)
}

/// The same check on the names a component imports, as its bytes or an
/// OCI artifact's config list them (the config is read before the
/// component is downloaded).
pub fn check_import_names(
    name: &str,
    imports: impl IntoIterator<Item = String>,
) -> Result<(), LoadError> {
    let mut refused = Vec::new();
    for import in imports {
        if contract_import(&import) || sandbox::provides(&import) {
            continue;
        }
        // Another contract version's import: a contract mismatch, not a
        // capability the sandbox withholds.
        if import.starts_with("reconciler:guest/") {
            return Err(LoadError::WorldMismatch {
                guest: name.to_owned(),
                detail: format!(
                    "it imports {import}; this host serves {}",
                    version::served()
                ),
            });
        }
        refused.push(import);
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(LoadError::UnsupportedImport {
            guest: name.to_owned(),
            import: refused.join(", "),
        })
    }
}

pub(super) fn load(rt: &Runtime, name: &str, bytes: &[u8]) -> Result<Module, LoadError> {
    let digest = artifacts::digest(bytes);
    if !bytes.starts_with(b"\0asm") {
        return Err(LoadError::NotAComponent {
            guest: name.to_owned(),
            detail: "the file is not WebAssembly (it does not start with the `\\0asm` header)"
                .to_owned(),
        });
    }
    if bytes.starts_with(b"\0asm\x01\0\0\0") {
        return Err(LoadError::NotAComponent {
            guest: name.to_owned(),
            detail: "this is a core WebAssembly module; build the guest with `cargo build --target wasm32-wasip2`, which links a component".to_owned(),
        });
    }
    check_imports(name, bytes)?;
    let compiled = match &rt.cache {
        Some(c) => c.load(&rt.engine, bytes, &digest),
        None => Component::new(&rt.engine, bytes).map(|c| (c, false)),
    };
    let (component, from_cache) = compiled.map_err(|e| compile_error(name, e))?;
    let world_mismatch = |detail: String| LoadError::WorldMismatch {
        guest: name.to_owned(),
        detail,
    };
    let ty = component.component_type();
    let contract = version::detect(ty.exports(&rt.engine).map(|(export, _)| export))
        .map_err(world_mismatch)?;
    let instance_pre = rt
        .linker
        .instantiate_pre(&component)
        .map_err(|e| world_mismatch(format!("{e:#}")))?;
    let pre = match contract {
        ContractVersion::V0_1 => v0_1::GuestPre::new(instance_pre).map(Pre::V0_1),
        ContractVersion::V0_2 => v0_2::GuestPre::new(instance_pre).map(Pre::V0_2),
        ContractVersion::V0_3 => v0_3::GuestPre::new(instance_pre).map(Pre::V0_3),
        ContractVersion::V0_4 => v0_4::GuestPre::new(instance_pre).map(Pre::V0_4),
        ContractVersion::V0_5 => v0_5::GuestPre::new(instance_pre).map(Pre::V0_5),
        ContractVersion::V0_6 => v0_6::GuestPre::new(instance_pre).map(Pre::V0_6),
    }
    .map_err(|e| world_mismatch(format!("{e:#}")))?;
    let mut module = Module {
        name: name.to_owned(),
        digest,
        spec: Arc::new(placeholder_spec()),
        declared: Arc::default(),
        optional: Arc::default(),
        across: Arc::default(),
        projections: Arc::default(),
        contract,
        pre,
        engine: rt.engine.clone(),
        slots: rt.slots.clone(),
        memory_bytes: rt.limits.memory_bytes,
        deadline: rt.deadline(),
        from_cache,
    };
    let spec = module.describe().map_err(|source| LoadError::Describe {
        guest: name.to_owned(),
        source,
    })?;
    spec.validate().map_err(|source| LoadError::Spec {
        guest: name.to_owned(),
        source,
    })?;
    module.declared = Arc::new(spec.readable().cloned().collect());
    module.optional = Arc::new(
        spec.reads
            .iter()
            .filter(|r| r.optional)
            .map(|r| r.kind.clone())
            .collect(),
    );
    module.across = Arc::new(
        spec.reads
            .iter()
            .filter(|r| r.cross_namespace)
            .map(|r| r.kind.clone())
            .collect(),
    );
    module.projections = Arc::new(
        spec.reads
            .iter()
            .filter(|r| r.fields.is_some())
            .map(|r| (r.kind.clone(), r.projection()))
            .collect(),
    );
    module.spec = Arc::new(spec);
    Ok(module)
}

/// What a failed compile means: a component the instance pool cannot
/// hold (wasmtime checks the pool's per-component limits once the
/// component is compiled, and says so in its message), or not a component
/// at all.
fn compile_error(name: &str, e: wasmtime::Error) -> LoadError {
    let detail = format!("{e:#}");
    if detail.contains("in the pooling allocator")
        || detail.contains("does not fit in pooling allocator requirements")
    {
        return LoadError::PoolLimit {
            guest: name.to_owned(),
            detail,
        };
    }
    LoadError::NotAComponent {
        guest: name.to_owned(),
        detail,
    }
}

/// The spec a module carries until its own `describe` answered.
fn placeholder_spec() -> KindSpec {
    KindSpec {
        group: String::new(),
        version: String::new(),
        kind: String::new(),
        plural: String::new(),
        namespaced: true,
        profile: reconciler_conventions::kind::Profile::Progressing,
        aspects: Vec::new(),
        advisory: Vec::new(),
        reasons: Vec::new(),
        negative_polarity: Vec::new(),
        quiet_reasons: Vec::new(),
        stalls: Vec::new(),
        reads: Vec::new(),
        pause: None,
        spec_schema: None,
        printer_columns: vec![],
        writes: Vec::new(),
        parent_gates: ParentGates::ALL,
    }
}

impl Module {
    /// The guest's name (its file stem).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The hex SHA-256 of the module's bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn spec(&self) -> &Arc<KindSpec> {
        &self.spec
    }

    /// The contract version the module implements (`0.2.0`).
    pub fn contract_version(&self) -> &'static str {
        self.contract.as_str()
    }

    pub fn contract(&self) -> ContractVersion {
        self.contract
    }

    /// Whether the compiled artifact came from the cache.
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// A slot of the instance pool, for one call's store (dropped after it).
    fn slot(&self) -> Result<InstanceSlot<'_>, GuestError> {
        self.slots
            .acquire()
            .map_err(|busy| GuestError::new(&self.name, GuestErrorClass::Host, busy.to_string()))
    }

    /// A fresh store for one call at `now`, its randomness seeded from
    /// `seed` (see [`Sandbox`]).
    fn store(&self, facts: FactServer, now: jiff::Timestamp, seed: Seed<'_>) -> Store<PassState> {
        let mut store = Store::new(
            &self.engine,
            PassState {
                facts,
                limiter: MemoryLimiter::new(self.memory_bytes),
                sandbox: Sandbox::new(now, seed),
            },
        );
        store.limiter(|s| &mut s.limiter);
        self.deadline.arm(&mut store);
        store
    }

    /// Calls `describe` in a fresh store.
    fn describe(&self) -> Result<KindSpec, GuestError> {
        let facts = FactServer::new(
            Arc::new(MemorySource::new()),
            [],
            jiff::Timestamp::UNIX_EPOCH,
        );
        let _slot = self.slot()?;
        let mut store = self.store(facts, jiff::Timestamp::UNIX_EPOCH, Seed::default());
        let (spec, writes, gates) = self
            .call_describe(&mut store)
            .map_err(|e| self.classify(e, &store))?;
        Ok(model::kind_spec(spec, writes, gates))
    }

    /// Instantiates the module and calls `describe` (and, from 0.3.0 on,
    /// `writes`; from 0.5.0 on, `parent-gates`), in the contract version
    /// it implements.
    fn call_describe(
        &self,
        store: &mut Store<PassState>,
    ) -> wasmtime::Result<(WitKindSpec, Vec<WitKindRef>, ParentGates)> {
        match &self.pre {
            Pre::V0_6(pre) => {
                let guest = pre.instantiate(&mut *store)?;
                let reconciler = guest.reconciler_guest0_6_0_reconciler();
                let spec = reconciler.call_describe(&mut *store)?;
                let writes = reconciler.call_writes(&mut *store)?;
                let gates = reconciler.call_parent_gates(&mut *store)?;
                Ok((spec, writes, model::parent_gates(&gates)))
            }
            Pre::V0_5(pre) => {
                let guest = pre.instantiate(&mut *store)?;
                let reconciler = guest.reconciler_guest0_5_0_reconciler();
                let spec = reconciler.call_describe(&mut *store)?;
                let writes = reconciler.call_writes(&mut *store)?;
                let gates = reconciler.call_parent_gates(&mut *store)?;
                let gates: Vec<_> = twin(gates);
                Ok((twin(spec), twin(writes), model::parent_gates(&gates)))
            }
            Pre::V0_4(pre) => {
                let guest = pre.instantiate(&mut *store)?;
                let reconciler = guest.reconciler_guest0_4_0_reconciler();
                let spec = reconciler.call_describe(&mut *store)?;
                let writes = reconciler.call_writes(&mut *store)?;
                Ok((twin(spec), twin(writes), ParentGates::ALL))
            }
            Pre::V0_3(pre) => {
                let guest = pre.instantiate(&mut *store)?;
                let reconciler = guest.reconciler_guest0_3_0_reconciler();
                let spec = reconciler.call_describe(&mut *store)?;
                let writes = reconciler.call_writes(&mut *store)?;
                Ok((older_kind_spec(spec), twin(writes), ParentGates::ALL))
            }
            Pre::V0_2(pre) => pre
                .instantiate(&mut *store)?
                .reconciler_guest0_2_0_reconciler()
                .call_describe(store)
                .map(|spec| (older_kind_spec(spec), Vec::new(), ParentGates::ALL)),
            Pre::V0_1(pre) => pre
                .instantiate(&mut *store)?
                .reconciler_guest0_1_0_reconciler()
                .call_describe(store)
                .map(|spec| (older_kind_spec(spec), Vec::new(), ParentGates::ALL)),
        }
    }

    /// Instantiates the module and calls `reconcile` (before 0.3.0,
    /// `evaluate`: no changes), in the contract version it implements.
    fn call_reconcile(
        &self,
        store: &mut Store<PassState>,
        input: &Evaluation,
    ) -> wasmtime::Result<(WitVerdict, Vec<WitChange>)> {
        match &self.pre {
            Pre::V0_6(pre) => pre
                .instantiate(&mut *store)?
                .reconciler_guest0_6_0_reconciler()
                .call_reconcile(store, input)
                .map(|r| (r.verdict, r.changes)),
            Pre::V0_5(pre) => pre
                .instantiate(&mut *store)?
                .reconciler_guest0_5_0_reconciler()
                .call_reconcile(store, &twin(input))
                .map(|r| (twin(r.verdict), twin(r.changes))),
            Pre::V0_4(pre) => pre
                .instantiate(&mut *store)?
                .reconciler_guest0_4_0_reconciler()
                .call_reconcile(store, &twin(input))
                .map(|r| (twin(r.verdict), twin(r.changes))),
            Pre::V0_3(pre) => pre
                .instantiate(&mut *store)?
                .reconciler_guest0_3_0_reconciler()
                .call_reconcile(store, &twin(input))
                .map(|r| (twin(r.verdict), twin(r.changes))),
            Pre::V0_2(pre) => pre
                .instantiate(&mut *store)?
                .reconciler_guest0_2_0_reconciler()
                .call_evaluate(store, &twin(input))
                .map(|v| (twin(v), Vec::new())),
            Pre::V0_1(pre) => pre
                .instantiate(&mut *store)?
                .reconciler_guest0_1_0_reconciler()
                .call_evaluate(store, &twin(input))
                .map(|v| (twin(v), Vec::new())),
        }
    }

    /// What a pass costs before the guest runs, for the bench: a pool
    /// slot, a fresh store and an instance, dropped without a call.
    pub fn instantiate_only(&self) -> Result<(), GuestError> {
        let facts = FactServer::with_declared(
            Arc::new(MemorySource::new()),
            self.declared.clone(),
            jiff::Timestamp::UNIX_EPOCH,
        );
        let _slot = self.slot()?;
        let mut store = self.store(facts, jiff::Timestamp::UNIX_EPOCH, Seed::default());
        let instantiated = match &self.pre {
            Pre::V0_6(pre) => pre.instantiate(&mut store).map(drop),
            Pre::V0_5(pre) => pre.instantiate(&mut store).map(drop),
            Pre::V0_4(pre) => pre.instantiate(&mut store).map(drop),
            Pre::V0_3(pre) => pre.instantiate(&mut store).map(drop),
            Pre::V0_2(pre) => pre.instantiate(&mut store).map(drop),
            Pre::V0_1(pre) => pre.instantiate(&mut store).map(drop),
        };
        instantiated.map_err(|e| self.classify(e, &store))
    }

    /// What the module is served of each kind whose read names its fields.
    pub fn projections(&self) -> &BTreeMap<KindRef, Projection> {
        &self.projections
    }

    /// The same module served `path` of `kind` too: what tells a fixture
    /// which undeclared field its verdict turns on
    /// (`crate::fixture::undeclared`).
    pub fn served_also(&self, kind: &KindRef, path: &FieldPath) -> Module {
        let mut projections = BTreeMap::clone(&self.projections);
        if let Some(projection) = projections.get_mut(kind) {
            projection.add(path);
        }
        Module {
            projections: Arc::new(projections),
            ..self.clone()
        }
    }

    /// The same module served every object whole.
    pub fn served_whole(&self) -> Module {
        Module {
            projections: Arc::default(),
            ..self.clone()
        }
    }

    /// Evaluates one parent in a fresh store.
    pub fn evaluate(&self, req: EvaluateRequest<'_>) -> Evaluated {
        let namespace = req.parent["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        let facts = FactServer::with_declared(req.source, self.declared.clone(), req.now)
            .with_optional(self.optional.clone())
            .with_cross_namespace(self.across.clone())
            .with_projections(self.projections.clone())
            .for_parent(req.parent);
        // Declared before the store, so dropped after it: the slot is free
        // again only once the instance is gone.
        let _slot = match self.slot() {
            Ok(slot) => slot,
            Err(e) => {
                return Evaluated {
                    outcome: Err(e),
                    changes: Vec::new(),
                    withdrawals: Vec::new(),
                    reads: facts.into_reads(),
                    failed_read: None,
                    past_cache_wanted: BTreeSet::new(),
                    change_states: BTreeMap::new(),
                };
            }
        };
        let meta = &req.parent["metadata"];
        let field = |key: &str| meta[key].as_str().unwrap_or_default();
        let seed = Seed {
            uid: field("uid"),
            namespace,
            name: field("name"),
            resource_version: field("resourceVersion"),
        };
        let mut store = self.store(facts, req.now, seed);
        let input = Evaluation {
            parent: Object {
                meta: object_meta(req.parent),
                json: req.parent.to_string(),
            },
            paused: req.paused,
            settings: req.settings.to_vec(),
        };
        let contract = |detail| GuestError::new(&self.name, GuestErrorClass::Contract, detail);
        let outcome = self
            .call_reconcile(&mut store, &input)
            .map_err(|e| self.classify(e, &store))
            .and_then(|(verdict, changes)| {
                let verdict = model::verdict(verdict).map_err(contract)?;
                let changes = model::changes(changes, &self.spec, namespace).map_err(contract)?;
                Ok((verdict, changes))
            });
        let mut facts = store.into_data().facts;
        let failed_read = facts.take_failed_read();
        let past_cache_wanted = facts.take_past_cache_wanted();
        let change_states = facts.take_change_states();
        let reads = facts.into_reads();
        match outcome {
            Ok((verdict, (changes, withdrawals))) => Evaluated {
                outcome: Ok(verdict),
                changes,
                withdrawals,
                reads,
                failed_read,
                past_cache_wanted,
                change_states,
            },
            Err(e) => Evaluated {
                outcome: Err(e),
                changes: Vec::new(),
                withdrawals: Vec::new(),
                reads,
                failed_read,
                past_cache_wanted,
                change_states,
            },
        }
    }

    /// Names what went wrong in a call, from the error wasmtime returned.
    fn classify(&self, e: wasmtime::Error, store: &Store<PassState>) -> GuestError {
        if let Some(cap) = e.downcast_ref::<MemoryCapExceeded>() {
            return GuestError::new(&self.name, GuestErrorClass::MemoryLimit, cap.to_string());
        }
        // The slots are sized to the pool, so this is a host defect.
        if let Some(pool) = e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>() {
            return GuestError::new(
                &self.name,
                GuestErrorClass::Host,
                format!("the instance pool refused an instance: {pool}"),
            );
        }
        if let Some(exceeded) = e.downcast_ref::<DeadlineExceeded>() {
            return GuestError::new(&self.name, GuestErrorClass::Deadline, exceeded.to_string());
        }
        let stderr = store.data().sandbox.stderr();
        match e.downcast_ref::<Trap>() {
            Some(trap) => {
                let detail = if stderr.is_empty() {
                    format!("{trap}")
                } else {
                    format!("{trap}; the guest said: {stderr}")
                };
                GuestError::new(&self.name, GuestErrorClass::Trap, detail)
            }
            None => GuestError::new(&self.name, GuestErrorClass::Trap, format!("{e:#}")),
        }
    }
}
