"""The generated fleet job (harness/fleet/script.py): its text, and its behaviour run under bash
with stand-ins for srun/scontrol and for the interpreter (fast, no Slurm needed)."""

import os
import subprocess

import pytest

from harness.errors import UsageError
from harness.fleet.script import (
    FleetSpec,
    parse_node_env,
    parse_node_prefix,
    render_node_script,
    render_sbatch,
    submit_command,
)


def spec(tmp_path, **kw):
    base = dict(
        run_dir=tmp_path / "run",
        nodes=3,
        key=tmp_path / "keys" / "dossier.key",
        python="/opt/py/bin/python",
        pythonpath="/src/rig-dossier",
    )
    return FleetSpec(**{**base, **kw})


def bash_syntax_ok(text, tmp_path):
    script = tmp_path / "check.sh"
    script.write_text(text)
    return subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True).returncode == 0


def test_cpu_fleet_script_runs_one_dossier_per_node_then_a_gloo_allreduce(tmp_path):
    s = spec(tmp_path, partition="batch", time_min=20, skip=("roofline", "precision"))
    text = render_sbatch(s)
    assert "#SBATCH --nodes=3" in text and "#SBATCH --partition=batch" in text
    assert "#SBATCH --time=20" in text and "#SBATCH --exclusive" in text
    assert "--gpus" not in text and "--container" not in text
    node_step = next(line for line in text.splitlines() if "node.sh" in line and line.startswith("srun"))
    assert "--ntasks-per-node=1" in node_step and "--nodes=3" in node_step
    allreduce = next(line for line in text.splitlines() if "harness.probes.allreduce" in line)
    assert "--launcher env --backend gloo" in allreduce and '--master-addr "$MASTER_ADDR"' in allreduce
    assert "--nodes=3 --ntasks=3 --ntasks-per-node=1" in allreduce
    assert "NodeAddr" in text and "MASTER_PORT" in text
    node = render_node_script(s)
    assert f'--output-dir {s.run_dir}/nodes/"$NODE" --name "$NODE" --signing-key {s.key}' in node
    assert "--runner local --skip roofline --skip precision" in node
    assert "export PYTHONPATH=/src/rig-dossier" in node
    assert bash_syntax_ok(text, tmp_path) and bash_syntax_ok(node, tmp_path)


def test_gpu_fleet_asks_for_gres_and_runs_one_nccl_rank_per_gpu(tmp_path):
    text = render_sbatch(spec(tmp_path, gpus_per_node=8))
    assert "#SBATCH --gpus-per-node=8" in text and "#SBATCH --ntasks-per-node=8" in text
    allreduce = next(line for line in text.splitlines() if "harness.probes.allreduce" in line)
    assert "--ntasks=24 --ntasks-per-node=8 --gpus-per-node=8" in allreduce and "--backend nccl" in allreduce


def test_container_image_goes_through_pyxis_with_the_run_dir_and_key_mounted(tmp_path):
    s = spec(tmp_path, container_image="registry.example/rig-dossier:1.0", python="python3")
    text = render_sbatch(s)
    srun_lines = [line for line in text.splitlines() if line.startswith("srun")]
    assert len(srun_lines) == 2
    for line in srun_lines:
        assert "--container-image=registry.example/rig-dossier:1.0" in line
        assert f"--container-mounts={s.key.parent}:{s.key.parent},{s.run_dir}:{s.run_dir}" in line
    assert "PYTHONPATH" not in text + render_node_script(s)  # the image's own harness is used


def test_serial_mode_runs_nodes_one_at_a_time(tmp_path):
    text = render_sbatch(spec(tmp_path, serial=True, node_time_min=5))
    assert "for node in $(cat" in text and '--nodes=1 --ntasks=1 --nodelist="$node"' in text and "--time=5" in text
    assert bash_syntax_ok(text, tmp_path)


def test_node_env_is_parsed_and_rendered_per_node(tmp_path):
    env = parse_node_env(["n2:OMP_NUM_THREADS=1", "n2:MKL_NUM_THREADS=1", "n3:X=a b"])
    assert env == {"n2": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}, "n3": {"X": "a b"}}
    node = render_node_script(spec(tmp_path, node_env=env))
    assert "n2) export MKL_NUM_THREADS=1; export OMP_NUM_THREADS=1; ;;" in node
    assert "n3) export X='a b'; ;;" in node
    for bad in ("OMP_NUM_THREADS=1", "n2:=1", "n2:1X=1", ":A=1"):
        with pytest.raises(UsageError):
            parse_node_env([bad])


def test_node_prefix_is_parsed_like_a_shell_and_wraps_only_that_node(tmp_path):
    prefixes = parse_node_prefix(["n2:taskset -c 0", "n3:nice -n 19 'my tool'"])
    assert prefixes == {"n2": ("taskset", "-c", "0"), "n3": ("nice", "-n", "19", "my tool")}
    node = render_node_script(spec(tmp_path, node_prefix=prefixes, node_env={"n2": {"A": "1"}}))
    assert "n2) export A=1; PREFIX=(taskset -c 0); ;;" in node
    assert "n3) PREFIX=(nice -n 19 'my tool'); ;;" in node
    assert '"${PREFIX[@]}" /opt/py/bin/python -m harness run' in node
    for bad in ("taskset -c 0", "n2:", ":taskset"):
        with pytest.raises(UsageError):
            parse_node_prefix([bad])


def test_submit_command_reproduces_the_options(tmp_path):
    s = spec(
        tmp_path,
        partition="p",
        skip=("roofline",),
        node_env={"n2": {"OMP_NUM_THREADS": "1"}},
        serial=True,
        node_prefix={"n2": ("taskset", "-c", "0")},
    )
    argv = submit_command(s, tmp_path)
    assert argv[:5] == ["dossier", "fleet", "submit", "--nodes", "3"]
    assert "--skip=roofline" in argv and "--node-env=n2:OMP_NUM_THREADS=1" in argv and argv[-1] == "--serial"
    assert "--node-prefix=n2:taskset -c 0" in argv
    assert argv[argv.index("--partition") + 1] == "p"


def write_exe(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_node_script_logs_under_the_node_name_applies_its_env_and_records_the_exit_code(tmp_path):
    fake_python = write_exe(
        tmp_path / "python", '#!/bin/bash\necho "argv: $*"\necho "omp=${OMP_NUM_THREADS:-unset}"\nexit 3\n'
    )
    wrapper = write_exe(tmp_path / "wrap", '#!/bin/bash\necho "wrapped"\nexec "$@"\n')
    s = spec(
        tmp_path,
        python=str(fake_python),
        node_env={"n2": {"OMP_NUM_THREADS": "1"}},
        node_prefix={"n2": (str(wrapper),)},
    )
    script = tmp_path / "node.sh"
    script.write_text(render_node_script(s))
    for node in ("n1", "n2"):
        env = {**os.environ, "SLURMD_NODENAME": node, "SLURM_JOB_ID": "42", "SLURM_NODEID": "0"}
        assert subprocess.run(["bash", str(script)], env=env).returncode == 3
        assert (s.run_dir / "nodes" / node / "exit_code").read_text().strip() == "3"
    log1 = (s.run_dir / "logs" / "slurm-42-n1.out").read_text()
    log2 = (s.run_dir / "logs" / "slurm-42-n2.out").read_text()
    assert "omp=unset" in log1 and "omp=1" in log2
    assert "wrapped" in log2 and "wrapped" not in log1
    assert f"-m harness run --output-dir {s.run_dir}/nodes/n2 --name n2" in log2
    assert "dossier run exit code 3" in log2


def test_batch_script_derives_the_master_from_the_first_nodes_nodeaddr(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_exe(
        bin_dir / "scontrol",
        '#!/bin/bash\ncase "$1 $2" in\n'
        '  "show hostnames") printf "gpu-a17\\ngpu-a18\\n" ;;\n'
        '  "show node") echo "NodeName=$3 Arch=x86_64 CoresPerSocket=1"; echo "   NodeAddr=10.1.2.17 NodeHostName=$3" ;;\n'
        "esac\n",
    )
    write_exe(bin_dir / "srun", f'#!/bin/bash\necho "srun $* MASTER_PORT=$MASTER_PORT" >> {tmp_path}/srun.calls\n')
    s = spec(tmp_path, nodes=2)
    script = tmp_path / "fleet.sbatch"
    script.write_text(render_sbatch(s))
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURM_JOB_NODELIST": "gpu-a[17-18]",
        "SLURM_JOB_ID": "1234",
    }
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "srun.calls").read_text().splitlines()
    assert "node.sh" in calls[0]
    assert "--master-addr 10.1.2.17" in calls[1] and "MASTER_PORT=21234" in calls[1]
    assert (s.run_dir / "nodelist").read_text().split() == ["gpu-a17", "gpu-a18"]
    assert (s.run_dir / "allreduce" / "exit_code").read_text().strip() == "0"
