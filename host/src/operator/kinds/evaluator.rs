//! How a pass evaluates its parent: through the kind's guest module, in wasm (the only evaluator the binary wires), or through a stand-in the benchmarks give [`crate::operator::run_with`] to measure what the sandbox costs against the same logic compiled in.

use crate::runtime::{EvaluateRequest, Evaluated, Module};

/// Evaluates one pass of a parent of `module`'s kind. The module is the
/// one the pass took (hot swap and probation stay the module's): an
/// evaluator other than [`Wasm`] stands in only for the call, and must
/// answer what the module would (its reads, its failed read, what it
/// wants read past the cache).
pub trait Evaluator: Send + Sync + 'static {
    fn evaluate(&self, module: &Module, request: EvaluateRequest<'_>) -> Evaluated;
}

/// The guest module, in its sandbox.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wasm;

impl Evaluator for Wasm {
    fn evaluate(&self, module: &Module, request: EvaluateRequest<'_>) -> Evaluated {
        module.evaluate(request)
    }
}
