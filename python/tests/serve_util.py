"""Starting and stopping `python3 -m genc.serve` for the server tests: a free
port on 127.0.0.1, /health polled until it answers, and always stopped
(SIGTERM, then SIGKILL after a grace period), also when a test fails."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('Conversation roles must be system, user or assistant') }}{% endif %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] | trim }}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_with_template(src: str, dst: str, template: str = CHAT_TEMPLATE) -> str:
    """A copy of the model folder whose tokenizer_config.json carries `template`."""
    shutil.copytree(src, dst, dirs_exist_ok=True)
    path = os.path.join(dst, "tokenizer_config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg["chat_template"] = template
    with open(path, "w") as f:
        json.dump(cfg, f)
    return dst


class ServerProcess:
    def __init__(self, plan: str, *args: str, env_path: str = "") -> None:
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        env = dict(os.environ)
        if env_path:
            env["PYTHONPATH"] = env_path + os.pathsep + env.get("PYTHONPATH", "")
        self.log = open(os.path.join(os.path.dirname(plan), "server-%d.log" % self.port), "w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "genc.serve", plan, "--port", str(self.port),
                                      "--device", "cpu", *args], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited with %d: %s" % (self.proc.returncode, self.output()))
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.time() > deadline:
                self.stop()
                raise RuntimeError("the server did not answer /health in 60 s: " + self.output())
            time.sleep(0.1)

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def metrics(self) -> dict:
        """genc_* samples of /metrics, name{labels} -> value."""
        with urllib.request.urlopen(self.base + "/metrics", timeout=5) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out
