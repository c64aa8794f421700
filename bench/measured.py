"""Run a benchmark process and read its peak RSS (wait4's ru_maxrss) and CPU time as it exits."""
import os
import subprocess
import tempfile
import threading


def run_measured(cmd, env=None, timeout=1800):
    """Run CMD; return (stdout text, peak RSS bytes of that process). Raises on failure."""
    out, rss, _ = run_measured_usage(cmd, env, timeout)
    return out, rss


def run_measured_usage(cmd, env=None, timeout=1800):
    """Run CMD; return (stdout text, peak RSS bytes, user + system CPU seconds of that process).
    Raises on failure."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=err,
                             stdin=subprocess.DEVNULL, env=env)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            out = p.stdout.read()
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
            p.stdout.close()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            tail = err.read().decode("utf-8", "replace")[-3000:]
            raise SystemExit(f"{' '.join(map(str, cmd[:4]))} ... exited {p.returncode}:\n{tail}")
    return out.decode("utf-8", "replace"), ru.ru_maxrss * 1024, ru.ru_utime + ru.ru_stime
