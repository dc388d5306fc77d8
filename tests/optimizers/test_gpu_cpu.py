from brain.domain import RoleSpec, Stage
from optimizers.gpu_cpu import (
    GpuCpuSettings,
    GpuCpuSuggestionOptimizer,
    RunUsage,
    suggest_role,
)
from tests.builders.views import context, job, past_run, usage

SETTINGS = GpuCpuSettings()


def worker_run(uid, nodes, **kw):
    return past_run(uid, nodes, gpu_type="A100", **kw)


def three_runs():
    """Runs whose worker usage is the worked example (4 GPUs per worker); run 3 has two
    workers."""
    return [
        worker_run(
            "r1",
            [
                usage(
                    "w0",
                    "worker",
                    cpu_mean=4,
                    cpu_max=6,
                    gpu_util_mean=0.30,
                    gpu_memory_util_max=0.40,
                    gpu=4,
                )
            ],
        ),
        worker_run(
            "r2",
            [
                usage(
                    "w0",
                    "worker",
                    cpu_mean=5,
                    cpu_max=7,
                    gpu_util_mean=0.36,
                    gpu_memory_util_max=0.45,
                    gpu=4,
                )
            ],
        ),
        worker_run(
            "r3",
            [
                # per run: util mean (0.30+0.36)/2 = 0.33, memory util max 0.42,
                # CPU max 8, CPU mean (5+7)/2 = 6
                usage(
                    "w0",
                    "worker",
                    cpu_mean=5,
                    cpu_max=8,
                    gpu_util_mean=0.30,
                    gpu_memory_util_max=0.42,
                    gpu=4,
                ),
                usage(
                    "w1",
                    "worker",
                    cpu_mean=7,
                    cpu_max=5,
                    gpu_util_mean=0.36,
                    gpu_memory_util_max=0.20,
                    gpu=4,
                ),
            ],
        ),
    ]


def test_core_function_worked_example():
    runs = [
        RunUsage(4, 6, 0.30, 0.40, allocated_gpus=4),
        RunUsage(5, 7, 0.36, 0.45, allocated_gpus=4),
        RunUsage(6, 8, 0.33, 0.42, allocated_gpus=4),
    ]
    s = suggest_role(runs, SETTINGS)
    # util mean (0.30+0.36+0.33)/3 = 0.33 < memory util max 0.45 -> 4 x 0.45 / 0.9 = 2 GPUs
    assert s.gpu == 2
    # max CPU 8 / 0.5 = 16; mean CPU (4+5+6)/3 = 5, / 0.5 = 10
    assert s.cpu_limit == 16
    assert s.cpu_request == 10
    # with tenths of GPUs the same numbers give exactly 2.0, not 4 x 0.33 / 0.9 = 1.5
    assert suggest_role(runs, GpuCpuSettings(gpu_step=0.1)).gpu == 2.0


def test_optimizer_worked_example_from_history():
    the_job = job(gpu_type="A100", roles={"worker": RoleSpec(count=4, gpu=4, cpu=32)})
    proposal = GpuCpuSuggestionOptimizer().propose(
        context(Stage.create, the_job, history=three_runs()), SETTINGS
    )
    # Same numbers as the core example, aggregated from NodeUsage: 2 GPUs, request 10, limit 16.
    # No opinion on the count (it used to restate the declared 4, overriding startup's).
    assert proposal.roles["worker"] == RoleSpec(cpu=10, cpu_limit=16, gpu=2)
    [why] = proposal.reasons
    assert why.optimizer == "gpu_cpu"
    assert why.evidence["gpu_memory_util_max"] == 0.45
    assert why.threshold["gpu_target_utilization"] == 0.9
    assert "2.0 GPUs" in why.message


def test_gpus_scale_what_the_past_runs_had_not_the_new_request():
    # The new run asks for 8 GPUs per worker; the past runs had 4 and used at most 45 % of
    # their GPU memory: 4 x 0.45 / 0.9 = 2 GPUs (8 x 0.45 / 0.9 = 4 would size from an
    # allocation the utilizations were never measured on).
    the_job = job(gpu_type="A100", roles={"worker": RoleSpec(count=4, gpu=8, cpu=32)})
    proposal = GpuCpuSuggestionOptimizer().propose(
        context(Stage.create, the_job, history=three_runs()), SETTINGS
    )
    assert proposal.roles["worker"].gpu == 2
    [why] = proposal.reasons
    assert why.evidence["allocated_gpus"] == 4
    assert "with 4 GPUs per node" in why.message
    assert "4 x 0.450 / 0.9 = 2.0 GPUs" in why.message


def test_runs_with_different_gpu_counts_compare_gpus_in_use():
    runs = [
        # 8 GPUs at 0.25 mean util = 2 in use; memory 8 x 0.30 = 2.4
        RunUsage(1, 1, 0.25, 0.30, allocated_gpus=8),
        # 4 GPUs at 0.60 = 2.4 in use; memory 4 x 0.50 = 2.0
        RunUsage(1, 1, 0.60, 0.50, allocated_gpus=4),
    ]
    s = suggest_role(runs, GpuCpuSettings(gpu_step=0.1))
    # in use: mean (2 + 2.4) / 2 = 2.2; memory max 2.4 -> 2.4 / 0.9 = 2.67 -> 2.7
    assert s.gpu == 2.7
    assert s.evidence["allocated_gpus"] == [4, 8]
    assert s.evidence["gpu_memory_in_use_max"] == 2.4


def test_fractional_gpus_round_to_step_instead_of_whole():
    runs = [RunUsage(1, 1, 0.5, 0.5, allocated_gpus=4)] * 3
    # 4 x 0.5 / 0.9 = 2.22 -> whole GPUs: 3; tenths: 2.3
    assert suggest_role(runs, SETTINGS).gpu == 3
    assert suggest_role(runs, GpuCpuSettings(gpu_step=0.1)).gpu == 2.3


def test_cpu_only_role_gets_cpu_but_no_gpu_opinion():
    s = suggest_role([RunUsage(cpu_mean=1.0, cpu_max=3.0)], SETTINGS)
    # 3 / 0.5 = 6 and 1 / 0.5 = 2
    assert (s.gpu, s.cpu_limit, s.cpu_request) == (None, 6, 2)


def test_thin_history_skips_role_with_reason():
    runs = three_runs()
    short = worker_run("short", runs[0].nodes, duration_s=20 * 60)  # under 30 minutes
    other_gpu = past_run("v100", runs[0].nodes, gpu_type="V100")
    the_job = job(gpu_type="A100", roles={"worker": RoleSpec(count=4, gpu=4)})
    history = [short, other_gpu, *runs[:2]]
    proposal = GpuCpuSuggestionOptimizer().propose(
        context(Stage.create, the_job, history=history), SETTINGS
    )
    # only r1 and r2 qualify, 3 are needed
    assert proposal.is_empty
    [why] = proposal.reasons
    assert "thin" in why.message
    assert why.evidence["qualifying_runs"] == 2


def test_only_the_last_runs_count():
    older = worker_run("old", [usage("w0", "worker", cpu_mean=50, cpu_max=60, gpu_util_mean=1.0)])
    the_job = job(gpu_type="A100", roles={"worker": RoleSpec(count=1, gpu=4)})
    history = [*three_runs(), older]  # most recent first: the old heavy run is the 4th
    proposal = GpuCpuSuggestionOptimizer().propose(
        context(Stage.create, the_job, history=history), SETTINGS
    )
    assert proposal.roles["worker"].cpu_limit == 16
