"""The web UI at / in a real browser (Debian's headless Chromium driven by
selenium): the chat playground streams an answer, stops one, enforces a JSON
schema; the dashboard follows /metrics. Screenshots go to
$STRIDE_ARTIFACTS/web-ui (default build/test-artifacts/web-ui).

Oracles: the answer the official openai client gets for the same greedy
request, `jsonschema`, and /metrics parsed here independently of the page."""
import json
import os
import shutil
import time

import jsonschema
import openai
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from stride_server import ROOT, SMOL, StrideServer

ARTIFACTS = os.path.join(os.environ.get("STRIDE_ARTIFACTS", os.path.join(ROOT, "build", "test-artifacts")), "web-ui")
API_KEY = "web-ui-test-key"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    keys = tmp_path_factory.mktemp("keys") / "keys"
    keys.write_text(API_KEY + "\n")
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--api-keys-file", keys,
                                       "--served-model-name", "smol"],
                     env={"STRIDE_MAX_TOKENS_CAP": "512", "STRIDE_METRICS_REQUIRE_KEY": "true"})
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    driver_bin = shutil.which("chromedriver")
    assert chromium and driver_bin, "Debian's chromium and chromium-driver are needed (scripts/setup installs them)"
    opts = Options()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,900"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(driver_bin), options=opts)
    d.set_page_load_timeout(60)
    os.makedirs(ARTIFACTS, exist_ok=True)
    yield d
    d.quit()


def wait(browser, cond, timeout=90):
    return WebDriverWait(browser, timeout, poll_frequency=0.1).until(lambda d: cond(d))


def open_ui(browser, srv, tab="chat"):
    browser.get(srv.url + "/#" + tab)
    browser.execute_script("localStorage.setItem('stride.apiKey', arguments[0]);", API_KEY)
    browser.refresh()
    wait(browser, lambda d: d.find_element(By.ID, "model").get_attribute("value") == "smol")
    time.sleep(0.5)
    browser.get_log("browser")  # drop the 401s of the load before the key was set


def set_field(browser, element_id, value):
    el = browser.find_element(By.ID, element_id)
    el.clear()
    if value != "":
        el.send_keys(str(value))


def send(browser, text):
    box = browser.find_element(By.ID, "prompt")
    box.send_keys(text)
    browser.find_element(By.ID, "send").click()


def status(browser):
    return browser.find_element(By.ID, "chat-status").text


def assistant_texts(browser):
    return [e.find_element(By.CLASS_NAME, "text").text
            for e in browser.find_elements(By.CSS_SELECTOR, "#messages .message.assistant")]


def severe_console_errors(browser):
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def client(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key=API_KEY, max_retries=0, timeout=120)


def scrape(srv):
    status_, _, body = srv.get("/metrics", headers={"Authorization": "Bearer " + API_KEY})
    assert status_ == 200
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_page_is_served_with_safe_headers(srv):
    for path, ctype in [("/", "text/html"), ("/ui/chat.js", "text/javascript"), ("/ui/style.css", "text/css")]:
        code, headers, body = srv.get(path)  # no key: the page holds no secrets
        assert code == 200 and headers["Content-Type"].startswith(ctype) and body
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
    html = srv.get("/")[2].decode()
    assert "http://" not in html and "https://" not in html  # nothing is fetched from elsewhere
    for path in ["/ui/../index.html", "/ui/", "/ui/%2e%2e/api.cpp", "/index.html", "/ui/missing.js"]:
        assert srv.get(path)[0] == 404
    assert srv.post("/", {})[0] == 404
    # The API itself still needs the key.
    assert srv.post("/v1/chat/completions", {"model": srv.model_name, "messages": [{"role": "user", "content": "x"}]})[0] == 401


def test_chat_streams_the_same_answer_as_the_api(srv, browser):
    open_ui(browser, srv)
    set_field(browser, "temperature", 0)
    set_field(browser, "max-tokens", 40)
    question = "What is the capital of France?"
    send(browser, question)
    wait(browser, lambda d: d.find_element(By.ID, "stop").is_enabled())  # streaming started
    wait(browser, lambda d: status(d) == "done")
    want = client(srv).chat.completions.create(model="smol", messages=[{"role": "user", "content": question}],
                                               max_tokens=40, temperature=0).choices[0].message.content
    assert assistant_texts(browser) == [want]
    meta = browser.find_element(By.CSS_SELECTOR, "#messages .message.assistant .meta").text
    assert "tokens" in meta and "first token" in meta
    browser.save_screenshot(os.path.join(ARTIFACTS, "chat.png"))
    # A second turn carries the first in its history.
    send(browser, "And of Italy?")
    wait(browser, lambda d: status(d) == "done" and len(assistant_texts(d)) == 2)
    want2 = client(srv).chat.completions.create(
        model="smol", max_tokens=40, temperature=0,
        messages=[{"role": "user", "content": question}, {"role": "assistant", "content": want},
                  {"role": "user", "content": "And of Italy?"}]).choices[0].message.content
    assert assistant_texts(browser)[1] == want2
    assert not severe_console_errors(browser)


def test_without_the_model_list_the_page_says_why(srv, browser):
    """No API key: /v1/models is a 401, so the page has no model name to send (the server requires one);
    sending says so instead of sending a request the server refuses, and entering the key recovers."""
    browser.get(srv.url + "/#chat")
    browser.execute_script("localStorage.removeItem('stride.apiKey');")
    browser.refresh()
    wait(browser, lambda d: status(d).startswith("models: 401"))
    send(browser, "Hello")
    wait(browser, lambda d: status(d).startswith("no model to ask"))
    assert "enter the API key" in status(browser)
    assert assistant_texts(browser) == [] and browser.find_element(By.ID, "prompt").get_attribute("value") == "Hello"
    key = browser.find_element(By.ID, "api-key")
    key.send_keys(API_KEY)
    browser.find_element(By.ID, "prompt").click()  # the key field's change event loads the list
    wait(browser, lambda d: d.find_element(By.ID, "model").get_attribute("value") == "smol")
    set_field(browser, "max-tokens", 4)
    browser.find_element(By.ID, "send").click()
    wait(browser, lambda d: status(d) == "done" and len(assistant_texts(d)) == 1)
    browser.get_log("browser")  # the 401s above


def test_stop_cancels_the_request_on_the_server(srv, browser):
    open_ui(browser, srv)
    set_field(browser, "temperature", 0.8)
    set_field(browser, "max-tokens", 500)
    before = scrape(srv).get('stride_request_success_total{finished_reason="cancelled"}', 0)
    send(browser, "Write a very long story about a lighthouse keeper.")
    wait(browser, lambda d: len(assistant_texts(d)[-1]) > 20)
    browser.find_element(By.ID, "stop").click()
    wait(browser, lambda d: status(d) == "stopped")
    # The server notices the closed connection and frees the sequence.
    deadline = time.time() + 30
    while time.time() < deadline:
        m = scrape(srv)
        if m.get('stride_request_success_total{finished_reason="cancelled"}', 0) > before and \
                m["stride_num_requests_running"] == 0:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the stopped request was not cancelled on the server")
    assert "stopped" in browser.find_element(By.CSS_SELECTOR, "#messages .message.assistant .meta").text


def test_json_schema_mode_and_hostile_text(srv, browser):
    open_ui(browser, srv)
    set_field(browser, "temperature", 0)
    set_field(browser, "max-tokens", 120)
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 150}},
              "required": ["name", "age"], "additionalProperties": False}
    browser.find_element(By.ID, "json-mode").click()
    box = browser.find_element(By.ID, "json-schema")
    box.clear()
    box.send_keys(json.dumps(schema))
    hostile = '<img src=x onerror="document.title=\'pwned\'"> Describe a person as JSON.'
    send(browser, hostile)
    wait(browser, lambda d: status(d) == "done")
    jsonschema.validate(json.loads(assistant_texts(browser)[-1]), schema)
    # User text is shown as text, never parsed as HTML.
    user = browser.find_elements(By.CSS_SELECTOR, "#messages .message.user .text")[-1]
    assert user.text == hostile
    assert not browser.find_elements(By.CSS_SELECTOR, "#messages img")
    assert browser.title == "stride"
    # A schema that does not parse is refused in the page; one the server refuses shows its error.
    box.clear()
    box.send_keys("{not json")
    send(browser, "hello")
    wait(browser, lambda d: "does not parse" in status(d))
    box.clear()
    box.send_keys('{"type": "object", "properties": {"x": {"type": "no-such-type"}}}')
    browser.find_element(By.ID, "send").click()  # the refused message is still in the box
    wait(browser, lambda d: status(d) == "error")
    assert "400" in browser.find_elements(By.CSS_SELECTOR, "#messages .message.assistant.error")[-1].text
    browser.save_screenshot(os.path.join(ARTIFACTS, "json-schema.png"))


def test_dashboard_follows_metrics(srv, browser):
    open_ui(browser, srv, tab="dashboard")
    wait(browser, lambda d: "scrapes" in d.find_element(By.ID, "dash-status").text)
    # Generate while the dashboard watches.
    c = client(srv)
    c.chat.completions.create(model="smol", messages=[{"role": "user", "content": "Count to twenty."}],
                              max_tokens=64, temperature=0)
    want_total = scrape(srv)["stride_generation_tokens_total"]
    wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#tile-generated .value").text == f"{want_total:.0f}")
    m = scrape(srv)
    kv_text = browser.find_element(By.CSS_SELECTOR, "#tile-kv .value").text
    assert kv_text.endswith(f"/{m['stride_kv_cache_pages_capacity']:.0f})"), kv_text
    # The throughput chart drew a non-zero rate for the interval with tokens.
    wait(browser, lambda d: d.execute_script(
        "const s = stride.app.dashboard.charts.throughput.series.get('generated');"
        "return s && s.some(v => v > 0);"))
    # Rates need two scrapes, so the first finite point can be the one with tokens; the
    # chart keeps drawing a point per scrape after it.
    wait(browser, lambda d: d.execute_script(
        "return stride.app.dashboard.charts.throughput.pointCount();") >= 2)
    # Derived figures match the page's own parse of the same text.
    page_cap = browser.execute_script("return stride.app.dashboard.latest.kvCapacity;")
    assert page_cap == m["stride_kv_cache_pages_capacity"]
    assert not severe_console_errors(browser)
    browser.save_screenshot(os.path.join(ARTIFACTS, "dashboard.png"))


def test_ui_can_be_turned_off():
    with StrideServer(SMOL, extra_args=["--kv-budget", "32M"], env={"STRIDE_WEB_UI": "false"}) as s:
        assert s.get("/")[0] == 404 and s.get("/ui/app.js")[0] == 404
        assert s.get("/health")[0] == 200
