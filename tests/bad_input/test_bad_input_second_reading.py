"""A hostile second reading of what a shared file may decide, and what it found: a key variable
confirmed through a link named like another (R10), a word set or bbq-prompts file outside the file's
folder (X01), an option of the wrong shape (L11), a bound or a name said without the file (B01, R07,
C07), a URL with a user name (R12), a spec whose brackets do not end it (T05), and a paid model with
no list price past --max-cost (M08). Each is refused with exit 2 naming the file and the field, and
nothing reaches the server the file names."""

from __future__ import annotations

from pathlib import Path

import pytest

from bad_input_helpers import cli, write_experiment
from fixtures.hostile_server import HostileServer
from test_bad_input_guards import DB_PASSWORD, KEY, _service, victim  # noqa: F401 (a fixture)


@pytest.mark.parametrize(
    ("model", "extra"),
    [
        ("openai:text-embedding-3-large-preview", ""),
        ("voyage:voyage-law-2", ""),
        (
            "openai:text-embedding-3-large-preview",
            "price = 0\n",
        ),  # a file's price stands in for none
        # debiased on load: the view sends where its source does, the fit's words first
        ("openai:text-embedding-3-large-preview", 'debias = "sent"\ndebias_lists = "en/debias-gender"\n'),
    ],
    ids=["M09-openai", "M08-voyage", "file-price-for-an-unlisted-model", "debiased-unlisted-model"],
)
def test_M08_a_model_without_a_list_price_does_not_get_past_max_cost(
    victim: Path, monkeypatch: pytest.MonkeyPatch, model: str, extra: str
) -> None:
    """A shared file naming a paid model the price list does not know, at the provider's address:
    --max-cost cannot be checked, so nothing is sent (the proxy's server records any request)."""
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-victim")
    with HostileServer() as server:
        config = write_experiment(victim, _service(victim, model, extra))
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{server.port}")
        monkeypatch.setenv("NO_PROXY", "")
        done = cli("run", str(config), "--max-cost", "0.0000001", cwd=victim)
        assert done.code == 2 and "Traceback" not in done.both, done.both
        assert "--max-cost 1e-07 cannot be checked" in done.err and "price=N" in done.err, done.err
        assert server.log == []


@pytest.mark.parametrize(
    ("spec", "extra", "allow", "secret"),
    [
        # R10: a link named LAB_KEY leading to VICTIM_DB_PASSWORD in the shared checkout
        ("openai:m", 'key_env = "VICTIM_DB_PASSWORD"\n', "key_env=LAB_KEY", DB_PASSWORD),
        # R10b: the same through the completion server's api_key_env
        (
            "completions:{url}[model=m]",
            'api_key_env = "OPENAI_API_KEY"\n',
            "api_key_env=LAB_KEY",
            KEY,
        ),
        # R11: a variable name written with a final slash reads as the same path
        ("openai:m", 'key_env = "LAB_KEY/"\n', "key_env=LAB_KEY", "lab-key-ok"),
    ],
    ids=["R10-link", "R10b-completions-link", "R11-slash"],
)
def test_a_key_variable_is_confirmed_by_its_name_never_as_a_path(
    victim: Path, monkeypatch: pytest.MonkeyPatch, spec: str, extra: str, allow: str, secret: str
) -> None:
    """`--allow key_env=LAB_KEY` confirms the variable LAB_KEY, not whatever a file or folder named
    LAB_KEY in the working folder links to: the file's other variable is refused, nothing sent."""
    monkeypatch.setenv("LAB_KEY", "lab-key-ok")
    (victim / "LAB_KEY").symlink_to(
        "VICTIM_DB_PASSWORD" if "key_env =" in extra else "OPENAI_API_KEY"
    )
    with HostileServer() as server:
        url = server.url
        where = f'base_url = "{url}"\n' if spec.startswith("openai") else ""
        config = write_experiment(victim, _service(victim, spec.format(url=url), where + extra))
        confirm = ["--allow", f"base_url={url}", "--allow", f"location={url}", "--allow", allow]
        done = cli("run", str(config), *confirm, cwd=victim)
        assert done.code == 2, done.both
        assert "Traceback" not in done.both and len(done.err_lines()) <= 2, done.err
        name = allow.split("=")[0]
        assert str(config) in done.err and f"{name} = " in done.err, done.err
        assert server.log == [] and secret not in done.both


def test_a_url_is_confirmed_as_a_parsed_url() -> None:
    """Scheme and host case, a default port and a final slash do not matter; the host, port, path
    and credentials do, and text a parser could read two ways is compared as text only."""
    from bias.engine.guards import Allowed

    allowed = Allowed.parse(["base_url=HTTP://LocalHost:80/v1/"])
    assert allowed.confirms("base_url", "http://localhost/v1")
    for other in (
        "http://localhost:8000/v1",
        "http://127.0.0.1/v1",
        "http://localhost/v2",
        "http://user@localhost/v1",
        "http://localhost/v1/../v1",
        "https://localhost/v1",
    ):
        assert not allowed.confirms("base_url", other), other
    assert not Allowed.parse(["base_url=http://a/v1"]).confirms("base_url", "http://a\\@b/v1")
    assert not Allowed.parse(["key_env=LAB_KEY"]).confirms("key_env", "./LAB_KEY")
    assert Allowed.parse(["wordsets=ws.toml"]).confirms("wordset", "./ws.toml")  # a path is a path
    here = Path.cwd()
    assert Allowed.parse([f"wordset={here}"]).confirms("wordset", str(here / "sub" / "ws.toml"))
    assert not Allowed.parse([f"corpus={here}"]).confirms("corpus", str(here / "notes.txt"))


def test_X01_a_word_set_file_outside_the_files_folder_needs_the_command_line(
    victim: Path,
) -> None:
    """A shared file naming a private word set elsewhere: its words would go to the file's (confirmed)
    server. Refused, naming --allow wordset=PATH; confirmed, it runs."""
    from bad_input_helpers import words_toml
    from fixtures.planted import A_WORDS, B_WORDS, X_WORDS, Y_WORDS

    private = victim / "private"
    private.mkdir()
    secret = words_toml(
        private / "secret_ws.toml",
        X=["SECRET-rose", *X_WORDS[:7]],
        Y=Y_WORDS[:8],
        A=A_WORDS[:8],
        B=B_WORDS[:8],
    )
    shared = victim / "shared"
    shared.mkdir()
    with HostileServer() as server:
        body = (
            f'wordsets = ["{secret}"]\nmetrics = [{{ name = "weat", bootstrap = 0, permutations = 100 }}]\n'
            f'[[models]]\nspec = "openai:m[base_url={server.url}]"\n'
        )
        config = write_experiment(shared, body)
        refused = cli("run", str(config), "--allow", f"base_url={server.url}", cwd=victim)
        assert refused.code == 2 and len(refused.err_lines()) <= 2, refused.both
        assert f"--allow wordset={secret.resolve()}" in refused.err and str(config) in refused.err
        assert server.log == []
        listed = write_experiment(
            shared,
            '[[experiments]]\nwordset = "../private/secret_ws.toml"\nmetric = "weat"\n'
            f'model = "openai:m[base_url={server.url}]"\nparams = {{ bootstrap = 0 }}\n',
            "listed.toml",
        )
        refused = cli("run", str(listed), "--allow", f"base_url={server.url}", cwd=victim)
        assert refused.code == 2 and "--allow wordset=" in refused.err, refused.both
        assert server.log == []
        both = [f"base_url={server.url}", f"wordsets={secret}"]  # the grid form's name works too
        ran = cli(
            "run", str(config), *(x for value in both for x in ("--allow", value)), cwd=victim
        )
        assert ran.code == 0, ran.both
        assert server.log  # confirmed: the words went where the user said


@pytest.mark.parametrize(
    ("table", "allow", "words"),
    [
        # L11, L11b: a table for a route option, and the --allow its old refusal offered
        ('[models.base_url]\nhost = "127.0.0.1"\n', (), ("'base_url'", "got a table")),
        (
            '[models.base_url]\nhost = "127.0.0.1"\n',
            ("--allow", "base_url={'host': '127.0.0.1'}"),
            ("'base_url'", "got a table"),
        ),
        ('key_env = ["A", "B"]\n', (), ("'key_env'", "got a list")),
        ("retries = [1]\n", (), ("'retries'", "got a list")),
        # R07 and C07: a key the embedder does not know, named with the file; a look-alike shown
        ('BASE_URL = "http://127.0.0.1:9/v1"\n', (), ("no parameter 'BASE_URL'",)),
        ('"\u0430llow_pickle" = true\n', (), ("no parameter '<U+0430>llow_pickle'",)),
        # B01, B04: a bound a file oversteps, said with the file and the model
        ("retries = 1000000\n", (), ("model openai:m", "retries must be at most 10")),
        ("concurrency = 100000\n", (), ("model openai:m", "concurrency must be at most 32")),
        # R12: a URL whose first-read host is not where it goes says where it goes
        (
            'base_url = "http://127.0.0.1:47610@127.0.0.1:47611/v1"\n',
            (),
            ("then the host 127.0.0.1:47611", "--allow base_url="),
        ),
    ],
    ids=[
        "L11-table",
        "L11b-allowed",
        "list",
        "number-list",
        "R07-case",
        "C07-lookalike",
        "B01",
        "B04",
        "R12-userinfo",
    ],
)
def test_an_option_of_the_wrong_shape_is_refused_naming_the_file_and_field(
    victim: Path, table: str, allow: tuple[str, ...], words: tuple[str, ...]
) -> None:
    body = 'wordsets = ["en/weat1"]\nmetrics = ["weat"]\n[[models]]\nspec = "openai:m"\n' + table
    config = write_experiment(victim, body)
    done = cli("run", str(config), *allow, cwd=victim)
    assert done.code == 2 and "Traceback" not in done.both, done.both
    assert len(done.err_lines()) <= 2 and str(config) in done.err, done.err
    assert all(w in done.err for w in words), done.err


def test_a_files_bbq_prompts_file_outside_its_folder_needs_the_command_line(victim: Path) -> None:
    """The prompts of a bbq-prompts file go to the chat server in every request: a shared file naming
    one elsewhere (the user's own, unpublished) is refused as any file outside its folder is."""
    private = victim / "private"
    private.mkdir()
    prompts = private / "prompts.toml"
    prompts.write_text('kind = "bbq-prompts"\n', encoding="utf-8")
    shared = victim / "shared"
    shared.mkdir()
    body = (
        'models = ["chat:m[base_url=http://127.0.0.1:9/v1]"]\nwordsets = ["en/bbq-sample"]\n'
        f'metrics = [{{ name = "bbq", mode = "generate", prompts = "{prompts}" }}]\n'
    )
    config = write_experiment(shared, body)
    done = cli("run", str(config), "--allow", "base_url=http://127.0.0.1:9/v1", cwd=victim)
    assert done.code == 2 and "Traceback" not in done.both, done.both
    assert f"--allow prompts={prompts.resolve()}" in done.err and str(config) in done.err, done.err


def test_T05_a_files_spec_with_brackets_that_do_not_end_it_is_refused_naming_the_file(
    victim: Path,
) -> None:
    """A zero-width space after the brackets: the options did not close the spec, which was then
    taken for a model file "given with --model". Refused, naming the file and the spec, shown."""
    body = 'wordsets = ["en/weat1"]\nmetrics = ["weat"]\nmodels = ["word2vec:x.bin[mmap=true]\u200b"]\n'
    config = write_experiment(victim, body)
    done = cli("run", str(config), cwd=victim)
    assert done.code == 2 and "Traceback" not in done.both, done.both
    assert f"{config}: Model spec 'word2vec:x.bin[mmap=true]<U+200B>'" in done.err, done.err
    assert "do not pair up" in done.err and "--model" not in done.err.splitlines()[0]
