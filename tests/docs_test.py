"""The README and docs/ kept true: every relative link resolves, every command shown exists.

Links: each `[text](path#anchor)` of README.md, docs/*.md and docs/results/*.md that is not a URL must name an
existing file and, with an anchor, a heading of that file (GitHub's anchor rule). Commands: each
command line in a ```bash block that runs tfhp, the launcher, an experiment script or an
example must name an existing module or file, and every `--flag` it passes must be defined by
the program that reads it. Pure Python, no TensorFlow: fast.
"""
import ast
import glob
import os
import re

import pytest

from tfhp.launcher import link_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ['README.md'] + sorted(
    os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, 'docs', '*.md')) +
    glob.glob(os.path.join(ROOT, 'docs', 'results', '*.md')))
ABSL_BUILTINS = {'help', 'helpfull', 'helpshort', 'flagfile'}


def _read(relpath):
    with open(os.path.join(ROOT, relpath)) as f:
        return f.read()


def _without_code(text):
    """The text outside ``` blocks (links are not links in code)."""
    return re.sub(r'```.*?```', '', text, flags=re.S)


def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def anchors(relpath):
    return {anchor(h) for h in re.findall(r'^#+ (.*)$', _without_code(_read(relpath)), re.M)}


def _links(relpath):
    for target in re.findall(r'\]\(([^)\s]+)\)', _without_code(_read(relpath))):
        if not re.match(r'[a-z]+://', target):
            yield target


@pytest.mark.parametrize('page', PAGES)
def test_relative_links_resolve(page):
    broken = []
    for target in _links(page):
        path, _, fragment = target.partition('#')
        resolved = (os.path.normpath(os.path.join(os.path.dirname(page), path)) if path
                    else page)
        if not os.path.exists(os.path.join(ROOT, resolved)):
            broken.append('%s (no such file)' % target)
        elif fragment and (not resolved.endswith('.md') or fragment not in anchors(resolved)):
            broken.append('%s (no such heading)' % target)
    assert not broken, '%s: %s' % (page, broken)


def _defined(relpath):
    """Flag names a program defines: absl DEFINE_*('name', ...) and argparse '--name'."""
    text = _read(relpath)
    names = (set(re.findall(r"DEFINE_\w+\(\s*'(\w+)'", text)) |
             set(re.findall(r"add_argument\(\s*'--(\w+)'", text)))
    if 'link_config.OPTIONS.items()' in text:  # the links' options, from their one table
        names |= set(link_config.OPTIONS)
    return names


def _tfhp_flags():
    return _defined('tfhp/cli_flags.py') | ABSL_BUILTINS


def _commands(relpath):
    """Command lines of the ```bash blocks, continuation lines joined, comments dropped."""
    for block in re.findall(r'```bash\n(.*?)```', _read(relpath), re.S):
        for line in block.replace('\\\n', ' ').splitlines():
            line = line.split(' #')[0].strip()
            for command in line.split('&&'):
                if command.strip():
                    yield command.strip()


def _flags(words):
    return [w.lstrip('[').split('=')[0][2:].rstrip(']') for w in words if
            w.lstrip('[').startswith('--')]


def _check(command):
    """What is wrong with one command line: a list of messages (empty: nothing)."""
    words = command.split()
    before, after = (words[:words.index('--')], words[words.index('--') + 1:]) if (
        '--' in words) else (words, [])
    if words[0] == 'tfhp':
        known, rest = _tfhp_flags(), set()
    elif words[:3] == ['python', '-m', 'pytest']:
        return []
    elif words[:2] == ['python', '-m'] and len(words) > 2:
        module = words[2]
        path = module.replace('.', '/') + '.py'
        if not os.path.exists(os.path.join(ROOT, path)):
            path = module.replace('.', '/') + '/__main__.py'
        if not os.path.exists(os.path.join(ROOT, path)):
            return ['no module %s' % module]
        if module in ('tfhp', 'tfhp.diagnose', 'tfhp.ensemble'):
            known = _tfhp_flags() | _defined(path)
        elif module.startswith('experiments.'):
            # A script may define its flags through another script's (stale_gradients takes
            # four_combos'): the experiments modules it imports count too.
            imported = re.findall(r'^from experiments import (\w+)', _read(path), re.M)
            known = set(ABSL_BUILTINS).union(
                _defined(path), *[_defined('experiments/%s.py' % m) for m in imported])
        else:
            known = _defined(path) | ABSL_BUILTINS
        if module == 'tfhp.data':
            known |= set(re.findall(r"'--?(\w+)'", _read(path))) | set(
                re.findall(r"'(\w+)'", _read('tfhp/data/__main__.py')))
        rest = _tfhp_flags() if module in ('tfhp.launch', 'tfhp.sweep') else set()
    elif words[0] == 'python' and words[1].startswith('examples/'):
        if not os.path.exists(os.path.join(ROOT, words[1])):
            return ['no file %s' % words[1]]
        known, rest = _defined(words[1]), set()
    else:
        return []  # pip, pytest: not tfhp's
    unknown = [f for f in _flags(before) if f not in known]
    unknown += [f for f in _flags(after) if f not in rest]
    return ['--%s' % f for f in unknown]


@pytest.mark.parametrize('page', PAGES)
def test_commands_shown_exist(page):
    wrong = {c: _check(c) for c in _commands(page)}
    wrong = {c: w for c, w in wrong.items() if w}
    assert not wrong, '%s: %s' % (page, wrong)


@pytest.mark.parametrize('page', PAGES)
def test_modules_named_in_prose_exist(page):
    modules = set(re.findall(r'python -m ((?:experiments|tfhp)[\w.]*)', _read(page)))
    missing = [m for m in modules
               if not os.path.exists(os.path.join(ROOT, m.replace('.', '/') + '.py')) and
               not os.path.exists(os.path.join(ROOT, m.replace('.', '/'), '__main__.py'))]
    assert not missing, '%s: %s' % (page, missing)


def test_the_readme_is_a_front_page():
    readme = _read('README.md')
    assert len(readme.splitlines()) <= 160
    assert "pip install -e '.[cpu]' && tfhp" in readme
    assert "pip install -e '.[cpu,test]' && python -m pytest -q" in readme


def _module_map():
    text = _read('docs/design.md')
    start = text.index('## Module map')
    return re.search(r'```\n(.*?)```', text[start:], re.S).group(1)


def _packages():
    return sorted(os.path.relpath(os.path.dirname(p), ROOT)
                  for p in glob.glob(os.path.join(ROOT, 'tfhp', '*', '__init__.py')))


@pytest.mark.parametrize('package', _packages())
def test_each_packages_docstring_names_its_modules(package):
    """A package's docstring is its table of contents: each module is named in it."""
    with open(os.path.join(ROOT, package, '__init__.py')) as f:
        contents = ast.get_docstring(ast.parse(f.read())) or ''
    modules = sorted(name[:-len('.py')] for name in os.listdir(os.path.join(ROOT, package))
                     if name.endswith('.py') and name != '__init__.py')
    missing = [m for m in modules if not re.search(r'(?<![\w.])%s\b' % re.escape(m), contents)]
    assert not missing, '%s/__init__.py names %d of its %d modules; add %s' % (
        package, len(modules) - len(missing), len(modules), ', '.join(missing))


def test_the_module_map_names_every_module():
    """Each tfhp module is named in design.md's map: by its path, or by its file name on its
    package's entry."""
    block = _module_map()
    entries = re.split(r'\n(?=\S)', block)
    missing = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'tfhp', '**', '*.py'), recursive=True)):
        relpath = os.path.relpath(path, ROOT)
        package = os.path.dirname(relpath) + '/'
        name = os.path.basename(relpath)
        if package == 'tfhp/':
            found = relpath in block
        else:
            entry = next((e for e in entries if e.startswith(package)), '')
            found = bool(entry) and (name == '__init__.py' or name in entry)
        if not found:
            missing.append(relpath)
    assert not missing, 'docs/design.md\'s module map misses %s' % missing


def _section(relpath, heading):
    """The text of `relpath` from `heading` (a `## ` line) to the next `## ` heading."""
    text = _read(relpath)
    start = text.index('\n## %s\n' % heading)
    end = text.find('\n## ', start + 1)
    return text[start:end if end >= 0 else None]


def test_the_tf_config_example_is_the_task_its_flags_say():
    from tfhp.config import tf_config  # pylint: disable=g-import-not-at-top  # pure Python
    section = _section('docs/distributed.md', 'TF_CONFIG')
    example = re.search(r'```json\n(.*?)```', section, re.S).group(1)
    flags_line = re.search(r'```\n(--.*?)\n```', section, re.S).group(1)
    said = dict(word[2:].split('=', 1) for word in flags_line.split())
    assert tf_config.cluster_fields(example) == {
        'job_name': said['job_name'], 'task_index': int(said['task_index']),
        'ps_hosts': tuple(said['ps_hosts'].split(',')),
        'worker_hosts': tuple(said['worker_hosts'].split(',')),
        'controller_host': said.get('controller_host', '')}


def test_the_emulated_links_say_they_add_no_latency():
    section = ' '.join(_section('docs/distributed.md', 'Emulated links').split())
    assert 'The links shape bandwidth only, with no added latency' in section


def test_design_names_only_paths_that_exist():
    # A path in design.md's prose (`tfhp/replication/`, `worker.py`) names a file or package of
    # the repository, or one inside tfhp; a name scope written as a path once read as a
    # package. ('There is no `tfhp/distributed.py`' names one on purpose.)
    prose = _without_code(_read('docs/design.md'))
    paths = set(re.findall(r'(?<!no )`([\w./]+/|[\w./]+\.py)`', prose))
    known = {os.path.relpath(p, ROOT) + ('/' if os.path.isdir(p) else '')
             for p in glob.glob(os.path.join(ROOT, '**'), recursive=True)}
    assert len(paths) > 10
    missing = [p for p in sorted(paths)
               if not any(k == p or k.endswith('/' + p) for k in known)]
    assert not missing, 'docs/design.md names no such file or package: %s' % missing
