from brain.domain import RoleSpec, Stage, Strategy
from optimizers.startup import StartupOptimizer, StartupSettings
from tests.builders.views import context, job, past_run, usage

SETTINGS = StartupSettings()  # ps_memory_margin 1.2, cpu_step 0.1


def related_jobs():
    return [
        past_run(
            "a",
            [
                usage("ps0", "ps", cpu_mean=6, cpu_max=7.5, memory_max_mib=4000),
                usage("ps1", "ps", cpu_mean=5, cpu_max=6, memory_max_mib=3000),
                usage("chief", "chief", cpu_max=3.5, memory_max_mib=6000),
                usage("w1", "worker", cpu_max=4.2, memory_max_mib=5500),
            ],
        ),
        past_run(
            "b",
            [
                usage("ps0", "ps", cpu_mean=6, cpu_max=8, memory_max_mib=4000),
                usage("ps1", "ps", cpu_mean=6, cpu_max=7.2, memory_max_mib=3000),
                usage("ps2", "ps", cpu_mean=5, cpu_max=6, memory_max_mib=3000),
                usage("w1", "worker", cpu_max=3.9, memory_max_mib=7100),
            ],
        ),
        past_run(
            "c",
            [
                usage("ps0", "ps", cpu_mean=7, cpu_max=7.9, memory_max_mib=4500),
                usage("ps1", "ps", cpu_mean=6, cpu_max=6.5, memory_max_mib=4500),
                usage("chief", "chief", cpu_max=4.0, memory_max_mib=6900),
            ],
        ),
    ]


def test_three_related_jobs():
    proposal = StartupOptimizer().propose(context(Stage.create, history=related_jobs()), SETTINGS)
    # total PS CPU per job: a 6+5=11, b 6+6+5=17, c 7+6=13 -> mean 41/3 = 13.67
    # single PS peak: 8 (b/ps0) -> ps_count = ceil(13.67 / 8) = 2 (the max, 17, would give 3)
    # total PS memory per job: 7000, 10000, 9000 -> max 10000 -> 10000 / 2 x 1.2 = 6000 MiB
    assert proposal.roles["ps"] == RoleSpec(count=2, cpu=8, memory_mib=6000)
    # trainer: largest worker/chief CPU 4.2 (a/w1), memory 7100 (b/w1); the job declares
    # no chief, so the workers get it (it used to be a `chief` role the job lacks)
    assert proposal.roles["worker"] == RoleSpec(cpu=4.2, memory_mib=7100)
    assert "chief" not in proposal.roles
    assert all(r.optimizer == "startup" for r in proposal.reasons)
    assert proposal.reasons[0].evidence["total_ps_cpu_per_job"] == [11, 17, 13]


def test_history_beyond_the_setting_is_ignored():
    huge = past_run("old", [usage("ps0", "ps", cpu_mean=60, cpu_max=64, memory_max_mib=90000)])
    history = [*related_jobs(), huge]
    proposal = StartupOptimizer().propose(
        context(Stage.create, history=history), StartupSettings(max_history_jobs=3)
    )
    assert proposal.roles["ps"].cpu == 8


def test_no_history_uses_defaults_for_what_the_job_left_unsized():
    proposal = StartupOptimizer().propose(context(Stage.create), SETTINGS)
    assert proposal.roles["ps"] == RoleSpec(count=1, cpu=8, memory_mib=8192)
    assert proposal.roles["worker"] == RoleSpec(cpu=8, memory_mib=8192)
    assert all("default" in r.message for r in proposal.reasons)


def test_no_history_keeps_the_jobs_own_request():
    # 2 PS of 45 GiB and workers of 4 cores: startup's defaults (1 PS x 8 cores x 8192
    # MiB, workers 8 cores) would OOM-kill the PS and double the workers' CPU
    roles = {
        "ps": RoleSpec(count=2, cpu=6, memory_mib=46080),
        "worker": RoleSpec(count=12, cpu=4, memory_mib=4096, cpu_limit=6),
    }
    proposal = StartupOptimizer().propose(context(Stage.create, job(roles=roles)), SETTINGS)
    assert proposal.roles["ps"] == RoleSpec(count=2, cpu=6, memory_mib=46080)
    assert proposal.roles["worker"] == RoleSpec(cpu=4, memory_mib=4096)
    assert [r.message for r in proposal.reasons] == [
        "no related job with PS usage among 0 considered: ps 2 x 6 cores, 46080 MiB, the "
        "job's own request",
        "no related job with worker usage: worker 4 cores, 4096 MiB, the job's own request",
    ]


def test_no_history_fills_only_what_the_job_left_out():
    roles = {"ps": RoleSpec(count=3, memory_mib=20000), "worker": RoleSpec(count=2, cpu=2)}
    proposal = StartupOptimizer().propose(context(Stage.create, job(roles=roles)), SETTINGS)
    # PS CPU and worker memory were not asked: the defaults 8 cores and 8192 MiB
    assert proposal.roles["ps"] == RoleSpec(count=3, cpu=8, memory_mib=20000)
    assert proposal.roles["worker"] == RoleSpec(cpu=2, memory_mib=8192)
    assert [r.evidence["defaults_for"] for r in proposal.reasons] == [["cpu"], ["memory_mib"]]
    assert proposal.reasons[1].message.endswith(
        "worker 2 cores, 8192 MiB, the job's request and the defaults for what it left out: "
        "memory_mib"
    )


def test_allreduce_job_sizes_only_workers():
    history = [
        past_run(
            "ar",
            [usage("w0", "worker", cpu_max=11.93, memory_max_mib=20000.4)],
            strategy=Strategy.allreduce,
        )
    ]
    the_job = job(strategy=Strategy.allreduce, roles={"worker": RoleSpec(count=4)})
    proposal = StartupOptimizer().propose(context(Stage.create, the_job, history=history), SETTINGS)
    # CPU rounded up to 0.1 core, memory up to whole MiB
    assert proposal.roles == {"worker": RoleSpec(cpu=12.0, memory_mib=20001)}
