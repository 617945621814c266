#!/usr/bin/env python3
"""Runs the commands of the two CI recipes (github/fplab-drift.yml,
gitlab/fplab-drift.gitlab-ci.yml) as the forges would, without the forge:
the project (examples/ci/project) is pushed to a local bare git remote, a
job's workspace is a clone of it, `fplab` and `fplab-ci.sh` are on PATH
(what the recipes' install step puts in /usr/bin), and `gh` and `curl` are
stand-ins that record what they were asked and refuse when the token is
read-only. A remote whose pre-receive hook rejects every push stands for a
failed push. ctest: ci_workflows.

GitHub: each step's `if:` is evaluated (a small evaluator of the Actions
expressions the file uses: ==, !=, &&, ||, !, parentheses, contexts,
always(), contains(), object filters), `${{ }}` is substituted, and `run:` is executed with
`bash --noprofile --norc -eo pipefail` (what `shell: bash` runs); a failed
step skips the rest but for `if: always()`. The steps `tools` and `install`
(apt-get, building fplab) are not run: the install's prefix is checked
against Debian's python3's sys.path instead. GitLab: a job's `script:` runs
as one `bash -eo pipefail` script (the runner's shell); `before_script:`
(the install) is checked the same way.

Scenarios: no drift; drift; the label's own run (refresh, push, then the
check passes against the pushed baseline); a later push with the label
still on (no refresh); a rejected push (the job fails); a fork's pull
request with a read-only token (no post, the job passes); and the same on
GitLab.
  run_workflows.py FPLAB [PYTHON]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
GITHUB = os.path.join(HERE, "github", "fplab-drift.yml")
GITLAB = os.path.join(HERE, "gitlab", "fplab-drift.gitlab-ci.yml")
NOT_RUN = {"tools", "install"}  # steps that need the network and root


class Failure(Exception):
    pass


def expect(cond, what, log=""):
    if not cond:
        raise Failure(f"{what}\n{log}")


# --- a GitHub Actions expression evaluator (the subset the workflow uses) ---

TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(&&|\|\||==|!=|!|\(|\)|,)|([A-Za-z_][\w.*-]*))")


def lookup(ctx, path):
    value = ctx
    for part in path.split("."):
        if part == "*":  # an object filter: the list itself, each item then looked into
            value = value if isinstance(value, list) else []
        elif isinstance(value, list):
            value = [v.get(part) if isinstance(v, dict) else None for v in value]
        else:
            value = value.get(part) if isinstance(value, dict) else None
    return value


def evaluate(expr, ctx):
    """Translates the expression to Python over `ctx` and evaluates it."""
    out, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise Failure(f"cannot read the expression at '{expr[pos:]}'")
        string, op, name = m.groups()
        if string is not None:
            out.append(repr(string[1:-1].replace("''", "'")))
        elif op is not None:
            out.append({"&&": " and ", "||": " or ", "!": " not "}.get(op, op))
        elif name in ("true", "false", "null"):
            out.append({"true": "True", "false": "False", "null": "None"}[name])
        elif expr[m.end():].lstrip().startswith("("):
            out.append(f"fn_{name}")
        else:
            out.append(f"get({name!r})")
        pos = m.end()
    env = {"get": lambda p: lookup(ctx, p), "fn_always": lambda: True,
           "fn_contains": lambda seq, item: item in (seq or []),
           "fn_success": lambda: not ctx["failed"], "fn_failure": lambda: ctx["failed"]}
    return eval("".join(out), env)  # noqa: S307 (our own translation of our own file)


def as_text(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def substitute(text, ctx):
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: as_text(evaluate(m.group(1), ctx)), str(text))


# --- the scratch world: a bare remote, a workspace, stand-ins on PATH ---

class World:
    def __init__(self, root, fplab, python):
        self.root = root
        self.bin = os.path.join(root, "bin")
        os.makedirs(self.bin)
        os.symlink(os.path.abspath(fplab), os.path.join(self.bin, "fplab"))
        os.symlink(os.path.join(HERE, "fplab-ci.sh"), os.path.join(self.bin, "fplab-ci.sh"))
        self.calls = os.path.join(root, "forge-calls.txt")
        for tool in ("gh", "curl"):  # record; refuse when the token is read-only
            path = os.path.join(self.bin, tool)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n"
                        f"echo \"{tool} $*\" >> '{self.calls}'\n"
                        "if [ \"${FAKE_FORGE_READ_ONLY:-0}\" = 1 ]; then\n"
                        f"  echo '{tool}: HTTP 403: Resource not accessible by integration' >&2; exit 1\n"
                        "fi\n")
            os.chmod(path, 0o755)
        self.python = python
        self.gitconfig = os.path.join(root, "gitconfig")
        self.env = {
            "PATH": f"{self.bin}:/usr/bin:/bin", "HOME": root, "LANG": "C.UTF-8",
            "GIT_CONFIG_GLOBAL": self.gitconfig, "GIT_CONFIG_NOSYSTEM": "1",
            "PYTHON": python, "TMPDIR": root,
        }

    def git(self, *args, cwd=None):
        return subprocess.run(["git", *args], cwd=cwd, env=self.env, check=True,
                              capture_output=True, text=True).stdout.strip()

    def remote(self, name, reject=False):
        """A bare remote holding the project on branch `feature`."""
        bare = os.path.join(self.root, name + ".git")
        seed = os.path.join(self.root, name + "-seed")
        shutil.copytree(os.path.join(HERE, "project"), seed, ignore=shutil.ignore_patterns("build"))
        self.git("init", "-q", "-b", "feature", seed)
        self.git("-c", "user.name=dev", "-c", "user.email=dev@example.invalid", "-C", seed,
                 "add", "-A")
        self.git("-c", "user.name=dev", "-c", "user.email=dev@example.invalid", "-C", seed,
                 "commit", "-q", "-m", "the project")
        self.git("clone", "-q", "--bare", seed, bare)
        if reject:
            hook = os.path.join(bare, "hooks", "pre-receive")
            with open(hook, "w") as f:
                f.write("#!/bin/sh\necho 'remote: push rejected (read-only token)' >&2\nexit 1\n")
            os.chmod(hook, 0o755)
        return bare

    def workspace(self, bare, name):
        ws = os.path.join(self.root, name)
        self.git("clone", "-q", "--branch", "feature", bare, ws)
        return ws

    def forge_calls(self):
        if not os.path.exists(self.calls):
            return ""
        with open(self.calls) as f:
            text = f.read()
        os.remove(self.calls)
        return text


# --- GitHub ---

def github_job(world, workflow, event, bare, env):
    """Runs the one job of the workflow; returns (passed, log, ran step ids)."""
    ws = world.workspace(bare, "gh-" + str(len(os.listdir(world.root))))
    ctx = {"github": event["github"], "inputs": event.get("inputs", {}), "steps": {},
           "failed": False, "env": {}}
    output = os.path.join(world.root, "github_output")
    summary = os.path.join(ws, "..", os.path.basename(ws) + "-summary.md")
    base_env = dict(world.env, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=summary, **env)
    base_env.update({k: substitute(v, ctx) for k, v in workflow["env"].items()})
    (job,) = workflow["jobs"].values()
    expect(workflow["defaults"]["run"]["shell"] == "bash", "the workflow's run steps are not bash")
    log, ran = [], []
    for step in job["steps"]:
        sid = step.get("id", step.get("uses", ""))
        cond = step.get("if", "success()")
        if "always()" not in cond and "success()" not in cond and "failure()" not in cond:
            cond = f"success() && ({cond})"
        if not evaluate(cond, ctx):
            continue
        if "uses" in step or sid in NOT_RUN:
            continue  # checkout: the workspace is the clone; upload-artifact: nothing to do
        ran.append(sid)
        open(output, "w").close()
        step_env = dict(base_env, GITHUB_OUTPUT=output)
        step_env.update({k: substitute(v, ctx) for k, v in step.get("env", {}).items()})
        script = substitute(step["run"], ctx)
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                           cwd=ws, env=step_env, capture_output=True, text=True)
        log.append(f"--- step {sid} (exit {r.returncode})\n{r.stdout}{r.stderr}")
        with open(output) as f:
            outputs = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        ctx["steps"][sid] = {"outputs": outputs, "outcome": "success" if r.returncode == 0 else "failure"}
        if r.returncode != 0:
            ctx["failed"] = True
    summary_text = open(summary).read() if os.path.exists(summary) else ""
    return not ctx["failed"], "\n".join(log), ran, summary_text


def pr_event(action, labels=(), label=None, fork=False):
    repo = "org/project"
    return {"github": {
        "event_name": "pull_request", "repository": repo, "token": "t",
        "head_ref": "feature", "ref": "refs/pull/7/merge", "ref_name": "7/merge",
        "event": {"action": action, "label": {"name": label} if label else None,
                  "pull_request": {"number": 7, "labels": [{"name": n} for n in labels],
                                   "head": {"repo": {"full_name": "someone/project" if fork else repo}}}},
    }}


def baseline_commits(world, bare):
    return world.git("--git-dir", bare, "log", "--format=%s", "feature").splitlines()


def run_github(world):
    with open(GITHUB) as f:
        wf = yaml.safe_load(f)
    label = "fplab-refresh-baseline"
    results = []

    def case(name, event, drift, want_pass, reject=False, read_only=False, want_steps=None,
             forbid_steps=(), want_calls=None, refreshed=False):
        bare = world.remote("gh-remote-" + str(len(results)), reject=reject)
        before = baseline_commits(world, bare)
        env = {"FPLAB_EXAMPLE_DRIFT": drift, "FAKE_FORGE_READ_ONLY": "1" if read_only else "0"}
        passed, log, ran, summary = github_job(world, wf, event, bare, env)
        calls = world.forge_calls()
        after = baseline_commits(world, bare)
        expect(passed == want_pass, f"github: {name}: job {'passed' if passed else 'failed'}", log)
        for s in want_steps or ():
            expect(s in ran, f"github: {name}: step {s} did not run", log)
        for s in forbid_steps:
            expect(s not in ran, f"github: {name}: step {s} ran", log)
        if want_calls is not None:
            expect(want_calls in calls if want_calls else calls == "",
                   f"github: {name}: forge calls {calls!r}", log)
        pushed = after != before
        expect(pushed == refreshed, f"github: {name}: the remote {'moved' if pushed else 'did not move'}", log)
        if refreshed:
            expect(after[0] == "fplab: refresh the baseline", f"github: {name}: pushed {after[0]!r}", log)
        results.append(name)
        print(f"run_workflows: ok: github: {name}")
        return summary

    case("no drift: check passes, report posted", pr_event("opened"), "", True,
         want_steps=["check", "post"], forbid_steps=["refresh", "verdict"],
         want_calls="gh pr comment 7 --body-file")
    case("drift: the job fails", pr_event("synchronize"), "bug", False,
         want_steps=["check", "post", "verdict"], want_calls="gh pr comment 7")
    case("the label's run: refresh, push, then check passes",
         pr_event("labeled", labels=[label], label=label), "bug", True,
         want_steps=["refresh", "check", "post"], forbid_steps=["verdict"], refreshed=True)
    case("a push with the label still on: no refresh, drift fails",
         pr_event("synchronize", labels=[label]), "bug", False,
         want_steps=["check", "verdict"], forbid_steps=["refresh"])
    case("another label added while ours is on: no refresh",
         pr_event("labeled", labels=[label, "docs"], label="docs"), "bug", False,
         forbid_steps=["refresh"])
    case("the label's run, the push rejected: the job fails",
         pr_event("labeled", labels=[label], label=label), "bug", False, reject=True,
         want_steps=["refresh"], forbid_steps=["check", "post"])
    case("the label's run, nothing changed: nothing pushed, passes",
         pr_event("labeled", labels=[label], label=label), "", True, want_steps=["refresh", "check"])
    summary = case("a fork's pull request, read-only token: no post, passes",
                   pr_event("opened", fork=True), "", True, read_only=True,
                   want_steps=["check"], forbid_steps=["post"], want_calls="")
    expect("within tolerance" in summary, "github: fork: the report is not in the job summary", summary)
    case("a fork's pull request with drift: fails on the drift", pr_event("opened", fork=True),
         "bug", False, read_only=True, want_steps=["verdict"], forbid_steps=["post"])
    case("manual run with refresh_baseline",
         {"github": dict(pr_event("x")["github"], event_name="workflow_dispatch", head_ref="",
                         ref="refs/heads/feature", ref_name="feature", event={}),
          "inputs": {"refresh_baseline": True}}, "bug", True, want_steps=["refresh"], refreshed=True)


# --- GitLab ---

def run_gitlab(world):
    with open(GITLAB) as f:
        ci = yaml.safe_load(f)
    results = []

    def case(name, job, drift, want_rc, reject=False, fork=False, want_calls=None, refreshed=False):
        bare = world.remote("gl-remote-" + str(len(results)), reject=reject)
        ws = world.workspace(bare, "gl-ws-" + str(len(results)))
        world.git("checkout", "-q", "--detach", cwd=ws)  # the runner's detached HEAD
        host, path, token = "gitlab.example", "group/project", "glpat-t"
        with open(world.gitconfig, "w") as f:  # the push URL leads to this case's remote
            f.write(f'[url "{bare}"]\n\tinsteadOf = https://oauth2:{token}@{host}/{path}.git\n')
        env = dict(world.env, **{k: str(v) for k, v in ci["variables"].items()},
                   GITLAB_CI="true", CI_PIPELINE_SOURCE="merge_request_event",
                   CI_API_V4_URL=f"https://{host}/api/v4", CI_PROJECT_ID="42",
                   CI_MERGE_REQUEST_PROJECT_ID="42", CI_MERGE_REQUEST_IID="3",
                   CI_MERGE_REQUEST_SOURCE_PROJECT_ID="99" if fork else "42",
                   CI_MERGE_REQUEST_SOURCE_BRANCH_NAME="feature", CI_SERVER_HOST=host,
                   CI_PROJECT_PATH=path, FPLAB_EXAMPLE_DRIFT=drift)
        if not fork:
            env["FPLAB_GITLAB_TOKEN"] = token
        before = baseline_commits(world, bare)
        spec = ci[job]
        expect(spec["extends"] == ".fplab", f"gitlab: {job} does not extend .fplab")
        lines = spec["script"]
        expect(all(isinstance(x, str) for x in lines), f"gitlab: {job}: a script line read as a mapping")
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "\n".join(lines)],
                           cwd=ws, env=env, capture_output=True, text=True)
        log = r.stdout + r.stderr
        calls = world.forge_calls()
        after = baseline_commits(world, bare)
        expect(r.returncode == want_rc, f"gitlab: {name}: exit {r.returncode}, expected {want_rc}", log)
        if want_calls is not None:
            expect(want_calls in calls if want_calls else calls == "",
                   f"gitlab: {name}: forge calls {calls!r}", log)
        expect((after != before) == refreshed, f"gitlab: {name}: remote moved: {after != before}", log)
        results.append(name)
        print(f"run_workflows: ok: gitlab: {name}")

    notes = "https://gitlab.example/api/v4/projects/42/merge_requests/3/notes"
    case("no drift: passes, note posted", "fplab-drift", "", 0, want_calls=notes)
    case("drift: fails, note posted", "fplab-drift", "bug", 1, want_calls=notes)
    case("a fork's pipeline without the token: no post, passes", "fplab-drift", "", 0, fork=True,
         want_calls="")
    case("a fork's pipeline with drift: fails on the drift", "fplab-drift", "bug", 1, fork=True)
    case("refresh: pushes the baseline", "fplab-refresh-baseline", "bug", 0, want_calls=notes,
         refreshed=True)
    case("refresh, the push rejected: fails", "fplab-refresh-baseline", "bug", 1, reject=True)
    case("refresh, nothing changed: nothing pushed, passes", "fplab-refresh-baseline", "", 0)


# --- the install the recipes do ---

def check_install(python):
    """Both recipes install with a prefix whose module directory Debian's
    python3 searches, and call fplab-ci.sh by a name the install puts on PATH."""
    with open(GITHUB) as f:
        gh = yaml.safe_load(f)
    with open(GITLAB) as f:
        gl = yaml.safe_load(f)
    install_gh = next(s["run"] for s in gh["jobs"]["drift"]["steps"] if s.get("id") == "install")
    install_gl = "\n".join(gl[".fplab"]["before_script"])
    sys_path = json.loads(subprocess.run([python, "-c", "import sys, json; print(json.dumps(sys.path))"],
                                         check=True, capture_output=True, text=True).stdout)
    for name, text, ci in (("github", install_gh, gh["env"]["FPLAB_CI"]),
                           ("gitlab", install_gl, gl["variables"]["FPLAB_CI"])):
        m = re.search(r"cmake --install \S+ --prefix (\S+)", text)
        expect(m, f"{name}: no `cmake --install ... --prefix P` in the install")
        site = m.group(1).rstrip("/") + "/lib/python3/dist-packages"
        expect(site in sys_path, f"{name}: the module goes to {site}, not on {python}'s path {sys_path}")
        expect(ci == "fplab-ci.sh", f"{name}: FPLAB_CI is {ci!r}, not the installed fplab-ci.sh")
    print(f"run_workflows: ok: both installs put the module in a directory {python} searches")


def check_docs_quote():
    """docs/ci.md quotes the recipes: each of its yaml blocks is a verbatim
    excerpt of one of the two files, so the docs cannot drift from them."""
    docs = os.path.join(HERE, "..", "..", "docs", "ci.md")
    if not os.path.exists(docs):
        return
    with open(docs) as f:
        text = f.read()
    sources = "".join(open(p).read() for p in (GITHUB, GITLAB))
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    expect(blocks, "docs/ci.md quotes no yaml block")
    for block in blocks:
        expect(block in sources, f"docs/ci.md quotes what neither recipe says:\n{block}")
    print(f"run_workflows: ok: docs/ci.md's {len(blocks)} yaml blocks are excerpts of the recipes")


def main():
    fplab = sys.argv[1]
    python = sys.argv[2] if len(sys.argv) > 2 else "/usr/bin/python3"
    root = tempfile.mkdtemp(prefix="fplab-ci-workflows.")
    try:
        world = World(root, fplab, python)
        check_install(python)
        check_docs_quote()
        run_github(world)
        run_gitlab(world)
    except Failure as e:
        print(f"run_workflows: FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("run_workflows: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
