from brain.domain import RoleSpec, Stage
from optimizers.gpu_cpu import (
    GpuCpuSettings,
    GpuCpuSuggestionOptimizer,
    RunUsage,
    suggest_role,
)
from tests.optimizers.builders import context, job, past_run, usage

SETTINGS = GpuCpuSettings()


def worker_run(uid, nodes, **kw):
    return past_run(uid, nodes, gpu_type="A100", **kw)


def three_runs():
    """Runs whose worker usage is the worked example; run 3 has two workers."""
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
                ),
                usage(
                    "w1",
                    "worker",
                    cpu_mean=7,
                    cpu_max=5,
                    gpu_util_mean=0.36,
                    gpu_memory_util_max=0.20,
                ),
            ],
        ),
    ]


def test_core_function_worked_example():
    runs = [RunUsage(4, 6, 0.30, 0.40), RunUsage(5, 7, 0.36, 0.45), RunUsage(6, 8, 0.33, 0.42)]
    s = suggest_role(4, runs, SETTINGS)
    # util mean (0.30+0.36+0.33)/3 = 0.33 < memory util max 0.45 -> 4 x 0.45 / 0.9 = 2 GPUs
    assert s.gpu == 2
    # max CPU 8 / 0.5 = 16; mean CPU (4+5+6)/3 = 5, / 0.5 = 10
    assert s.cpu_limit == 16
    assert s.cpu_request == 10
    # with tenths of GPUs the same numbers give exactly 2.0, not 4 x 0.33 / 0.9 = 1.5
    assert suggest_role(4, runs, GpuCpuSettings(gpu_step=0.1)).gpu == 2.0


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


def test_fractional_gpus_round_to_step_instead_of_whole():
    runs = [RunUsage(1, 1, 0.5, 0.5)] * 3
    # 4 x 0.5 / 0.9 = 2.22 -> whole GPUs: 3; tenths: 2.3
    assert suggest_role(4, runs, SETTINGS).gpu == 3
    assert suggest_role(4, runs, GpuCpuSettings(gpu_step=0.1)).gpu == 2.3


def test_cpu_only_role_gets_cpu_but_no_gpu_opinion():
    s = suggest_role(None, [RunUsage(cpu_mean=1.0, cpu_max=3.0)], SETTINGS)
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
