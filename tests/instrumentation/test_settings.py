"""configure's options against the environment: precedence, parsing, and clear errors."""

import pytest
from replaygate.instrumentation import InstrumentationError
from replaygate.instrumentation._settings import DEFAULT_STORE, parse_headers, resolve_settings


def test_defaults() -> None:
    s = resolve_settings(env={})
    assert s.store == DEFAULT_STORE and s.otlp_endpoint is None and not s.langfuse_enabled
    assert s.capture_store is True and s.capture_otlp is False and s.capture_langfuse is False
    assert s.sample_ratio == 1.0 and s.otlp_protocol == "http/protobuf"


def test_env_variables() -> None:
    env = {
        "REPLAYGATE_STORE": "sqlite:////tmp/x.db",
        "OTEL_SERVICE_NAME": "svc",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
        "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%2Cb,x=1",
        "LANGFUSE_PUBLIC_KEY": "pk-lf-1",
        "LANGFUSE_SECRET_KEY": "sk-lf-1",
        "LANGFUSE_HOST": "http://langfuse:3000/",
        "REPLAYGATE_SAMPLE_RATIO": "0.25",
        "REPLAYGATE_CAPTURE_CONTENT": "false",
        "REPLAYGATE_OTLP_CAPTURE_CONTENT": "yes",
        "REPLAYGATE_REDACT": '["ORD-\\\\d+", "secret"]',
    }
    s = resolve_settings(env=env)
    assert s.store == "sqlite:////tmp/x.db" and s.service_name == "svc"
    assert s.otlp_endpoint == "http://collector:4318/v1/traces"
    assert s.otlp_headers == {"api-key": "a,b", "x": "1"}
    assert s.langfuse_enabled and s.langfuse_endpoint == "http://langfuse:3000/api/public/otel/v1/traces"
    assert s.sample_ratio == 0.25 and s.capture_store is False and s.capture_otlp is True
    assert s.redact == ("ORD-\\d+", "secret")


def test_explicit_arguments_win() -> None:
    env = {"REPLAYGATE_STORE": "/env.db", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://env:4318/v1/traces"}
    s = resolve_settings(env=env, store="/arg.db", otlp_endpoint="http://arg:4318", sample_ratio=0.5)
    assert s.store == "/arg.db" and s.otlp_endpoint == "http://arg:4318/v1/traces" and s.sample_ratio == 0.5
    assert resolve_settings(env=env, store=None, otlp_endpoint=False).store is None
    assert resolve_settings(env=env, otlp_endpoint=False).otlp_endpoint is None
    assert resolve_settings(env={"REPLAYGATE_STORE": "off"}).store is None
    assert resolve_settings(env=env).otlp_endpoint == "http://env:4318/v1/traces"  # used as is
    grpc = resolve_settings(
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    )
    assert grpc.otlp_endpoint == "http://c:4317" and grpc.otlp_protocol == "grpc"


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"REPLAYGATE_SAMPLE_RATIO": "2"}, "between 0 and 1"),
        ({"REPLAYGATE_SAMPLE_RATIO": "half"}, "REPLAYGATE_SAMPLE_RATIO"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "http/protobuf"),
        ({"LANGFUSE_PUBLIC_KEY": "pk-lf-1"}, "LANGFUSE_SECRET_KEY"),
        ({"REPLAYGATE_CAPTURE_CONTENT": "maybe"}, "REPLAYGATE_CAPTURE_CONTENT"),
        ({"REPLAYGATE_REDACT": "[not json"}, "REPLAYGATE_REDACT"),
        ({"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "key=value"),
    ],
)
def test_bad_values_raise_clear_errors(env: dict[str, str], needle: str) -> None:
    with pytest.raises(InstrumentationError, match=needle.replace("/", ".")):
        resolve_settings(env=env)


def test_bad_regex_is_a_configuration_error() -> None:
    import replaygate.instrumentation as ri

    with pytest.raises(InstrumentationError, match="not a valid regular expression"):
        ri.configure(store=None, redact=["(unclosed"], tracer_provider=_provider())


def test_parse_headers() -> None:
    assert parse_headers("a=1, b = two%20words ,", "x") == {"a": "1", "b": "two words"}
    assert parse_headers({"A": 1}, "x") == {"A": "1"}  # type: ignore[dict-item]


def _provider():  # type: ignore[no-untyped-def]
    from opentelemetry.sdk.trace import TracerProvider

    return TracerProvider()


def test_configure_and_resolve_settings_share_one_option_declaration() -> None:
    import inspect

    from replaygate.instrumentation import ConfigureOptions, configure
    from replaygate.instrumentation._settings import OPTION_NAMES

    own = {"tracer_provider", "exporters", "default"}
    params = inspect.signature(configure).parameters
    assert set(params) == own | {"options"}
    assert params["options"].kind is inspect.Parameter.VAR_KEYWORD
    assert set(ConfigureOptions.__annotations__) == OPTION_NAMES
    # every option is documented in configure's docstring, the user's manual
    doc = configure.__doc__ or ""
    for name in OPTION_NAMES | own:
        assert f"{name}:" in doc, name


def test_a_misspelt_option_is_refused_like_a_keyword_argument() -> None:
    from replaygate.instrumentation import configure

    with pytest.raises(TypeError, match="unexpected keyword argument 'sample_rate'"):
        resolve_settings(env={}, sample_rate=0.5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="configure\\(\\) got an unexpected keyword argument 'sotre'"):
        configure(sotre=None)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("given", "quoted"),
    [
        (
            "postgresql+psycopg://rg:s3cret@127.0.0.1:55439/replaygate",
            "postgresql+psycopg://rg:***@127.0.0.1:55439/replaygate",
        ),
        ("postgresql://rg@db/replaygate", "postgresql://rg@db/replaygate"),
    ],
)
def test_a_database_store_is_refused_quoting_the_url_with_its_password_masked(
    given: str, quoted: str
) -> None:
    for env, options in (({"REPLAYGATE_STORE": given}, {}), ({}, {"store": given})):
        with pytest.raises(InstrumentationError, match="replaygate collect") as caught:
            resolve_settings(env=env, **options)  # type: ignore[arg-type]
        assert f"store {quoted!r} is not a SQLite file" in str(caught.value)
        assert "s3cret" not in str(caught.value)
