/*
 * test_llm.c - llm_chat against tests/orchestrator_llm/fake_server.py on 127.0.0.1.
 *
 * main() starts the server (python3, standard library only) on an ephemeral
 * port and kills it at the end; the server also exits by itself when this
 * process dies. Each test picks a scenario through the model name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llm.h"
#include "llm_reply.h"

#define KEY "sk-kiln-test-0123456789abcdef"

/* Test-only state: the server this process started. */
static pid_t server_pid = -1;
static int server_port;
static char tmpdir[] = "/tmp/kiln-llm-test-XXXXXX";
static char port_file[256];

static void stop_server(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
        server_pid = -1;
    }
    unlink(port_file);
    rmdir(tmpdir);
}

/* Returns 0 with the server up, 77 when python3 cannot run, 1 on failure. */
static int start_server(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(port_file, sizeof(port_file), "%s/port", tmpdir);
    pid_t parent = getpid();
    server_pid = fork();
    if (server_pid < 0) {
        perror("fork");
        return 1;
    }
    if (server_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        execlp("python3", "python3", FAKE_SERVER, port_file, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) { /* at most 10 s */
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", &server_port) == 1;
            fclose(f);
            if (ok && server_port > 0)
                return 0;
        }
        int status;
        if (waitpid(server_pid, &status, WNOHANG) == server_pid) {
            server_pid = -1;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
                printf("skipping: python3 is not installed (needed for the fake server)\n");
                return 77;
            }
            fprintf(stderr, "fake server exited early (status %d)\n", status);
            return 1;
        }
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "fake server did not write %s within 10 s\n", port_file);
    return 1;
}

static char base_url[64];

/* A config for the fake server with fast retries. */
static struct llm_config cfg_for(const char *model)
{
    snprintf(base_url, sizeof(base_url), "http://127.0.0.1:%d/v1", server_port);
    struct llm_config c = {
        .base_url = base_url,
        .model = model,
        .timeout_ms = 5000,
        .max_retries = 2,
        .backoff_initial_ms = 1,
        .backoff_max_ms = 5,
    };
    return c;
}

static void assert_key_unrecorded(const struct llm_exchange *ex, const struct kiln_err *err)
{
    if (ex->request_body)
        assert_null(strstr(ex->request_body, KEY));
    if (ex->reply_body)
        assert_null(memmem(ex->reply_body, ex->reply_len, KEY, strlen(KEY)));
    if (ex->content)
        assert_null(strstr(ex->content, KEY));
    assert_null(strstr(err->msg, KEY));
}

static void test_good_reply(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("good");
    c.price_in_per_mtok = 2.0;
    c.price_out_per_mtok = 8.0;
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "You write kernels.", "Make saxpy fast.", &ex, &err),
                     KILN_OK);
    assert_int_equal(ex.http_status, 200);
    assert_int_equal(ex.attempts, 1);
    assert_int_equal(ex.backoff_ms, 0);
    assert_string_equal(ex.response_format, "json_schema");
    assert_int_equal(ex.prompt_tokens, 120);
    assert_int_equal(ex.completion_tokens, 45);
    assert_true(fabs(ex.cost_usd - (120 * 2.0 + 45 * 8.0) / 1e6) < 1e-12);
    assert_true(ex.latency_s > 0 && ex.latency_s < 5);
    assert_non_null(strstr(ex.request_body, "\"model\":\"good\""));
    assert_non_null(strstr(ex.request_body, "\"content\":\"Make saxpy fast.\""));
    assert_non_null(strstr(ex.request_body, "\"json_schema\""));
    assert_key_unrecorded(&ex, &err);

    struct llm_proposal p;
    assert_int_equal(llm_reply_parse(ex.content, ex.content_len, &p, &err), KILN_OK);
    assert_int_equal(p.language, LLM_LANG_CUDA);
    assert_string_equal(p.rationale, "a baseline");
    assert_string_equal(p.source, "// kiln: launch k grid(1) block(1) args(n)\n"
                                  "extern \"C\" __global__ void k(long long n) {}\n");
    llm_proposal_free(&p);
    llm_exchange_free(&ex);
    assert_null(ex.request_body);
}

static void test_no_key_sends_no_header(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("nokey");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, NULL, NULL, "hi", &ex, &err), KILN_OK);
    assert_int_equal(ex.attempts, 1);
    assert_int_equal(ex.cost_usd, -1); /* no prices configured */
    llm_exchange_free(&ex);
}

static void test_no_usage(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("nousage");
    c.price_in_per_mtok = 1;
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    assert_int_equal(ex.prompt_tokens, -1);
    assert_int_equal(ex.completion_tokens, -1);
    assert_true(ex.cost_usd < 0);
    llm_exchange_free(&ex);
}

static void test_fenced_reply(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("fenced");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    struct llm_proposal p;
    assert_int_equal(llm_reply_parse(ex.content, ex.content_len, &p, &err), KILN_OK);
    assert_int_equal(p.language, LLM_LANG_CUDA);
    llm_proposal_free(&p);
    llm_exchange_free(&ex);
}

static void test_malformed_content(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("malformed");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    struct llm_proposal p;
    assert_int_equal(llm_reply_parse(ex.content, ex.content_len, &p, &err), KILN_E_PARSE);
    assert_non_null(strstr(err.msg, "reply: not valid JSON at line 1 column"));
    assert_null(p.source);
    llm_exchange_free(&ex);
}

static void test_missing_field(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("missing");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    struct llm_proposal p;
    assert_int_equal(llm_reply_parse(ex.content, ex.content_len, &p, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg, "reply is missing the required key \"language\"");
    llm_exchange_free(&ex);
}

static void test_envelope_not_json(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("garbage");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_PARSE);
    assert_non_null(strstr(err.msg, "OpenAI-compatible API?): not valid JSON at line 1"));
    assert_int_equal(ex.http_status, 200);
    assert_int_equal(ex.attempts, 1);
    assert_null(ex.content);
    assert_string_equal(ex.reply_body, "<html>gateway says hi</html>");
    llm_exchange_free(&ex);
}

static void check_huge(const char *model)
{
    struct llm_config c = cfg_for(model);
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "the server's reply exceeded 4194304 bytes"));
    assert_int_equal(ex.attempts, 1); /* a cap is not retried */
    assert_true(ex.reply_len <= LLM_DEFAULT_REPLY_MAX);
    assert_null(ex.content);
    llm_exchange_free(&ex);
}

static void test_huge_reply_with_length(void **state)
{
    (void)state;
    check_huge("huge");
}

static void test_huge_reply_streamed(void **state)
{
    (void)state;
    check_huge("hugestream");
}

static void test_small_cap(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("good");
    c.max_reply_bytes = 100;
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "exceeded 100 bytes"));
    llm_exchange_free(&ex);
}

static void test_401(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("good"); /* wants KEY: anything else is a 401 */
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, "sk-wrong-key-99999999", "s", "u", &ex, &err), KILN_E_REJECTED);
    assert_int_equal(ex.http_status, 401);
    assert_int_equal(ex.attempts, 1);
    assert_non_null(strstr(err.msg, "the API rejected the key (401): \"Incorrect API key "
                                    "provided\"; set OPENAI_API_KEY"));
    assert_null(strstr(err.msg, "sk-wrong-key-99999999"));
    llm_exchange_free(&ex);
}

static void test_429_then_success(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("ratelimit#1");
    c.max_retries = 3;
    c.backoff_initial_ms = 1;
    c.backoff_max_ms = 50; /* Retry-After: 1 (s) is capped to 50 ms */
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    assert_int_equal(ex.attempts, 2);
    assert_int_equal(ex.http_status, 200);
    assert_int_equal(ex.backoff_ms, 50);
    assert_true(ex.latency_s >= 0.045);
    assert_int_equal(ex.prompt_tokens, 120);
    llm_exchange_free(&ex);
}

static void test_5xx_then_success(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("flaky#1");
    c.max_retries = 2;
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    assert_int_equal(ex.attempts, 3);
    assert_true(ex.backoff_ms >= 1 && ex.backoff_ms <= 10); /* two delays of at most 5 */
    llm_exchange_free(&ex);
}

static void test_500_exhausts_retries(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("error500");
    c.max_retries = 2;
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_IO);
    assert_int_equal(ex.attempts, 3);
    assert_int_equal(ex.http_status, 500);
    assert_non_null(strstr(err.msg, "answered 500 after 3 attempts: \"upstream exploded\""));
    llm_exchange_free(&ex);
}

static void test_never_answers(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("hang");
    c.timeout_ms = 300;
    c.max_retries = 1;
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_TIMEOUT);
    assert_int_equal(ex.attempts, 2);
    assert_int_equal(ex.http_status, 0);
    assert_true(ex.latency_s >= 0.55 && ex.latency_s < 3.0);
    assert_non_null(strstr(err.msg, "within 300 ms (2 attempts)"));
    llm_exchange_free(&ex);
}

static void test_json_schema_fallback(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("noschema");
    c.max_retries = 0; /* the fallback is not a retry */
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    assert_int_equal(ex.attempts, 2);
    assert_int_equal(ex.backoff_ms, 0);
    assert_string_equal(ex.response_format, "json_object");
    assert_non_null(strstr(ex.request_body, "\"response_format\":{\"type\":\"json_object\"}"));
    llm_exchange_free(&ex);
}

static void test_400_after_fallback(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("badreq");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_REJECTED);
    assert_int_equal(ex.attempts, 2);
    assert_int_equal(ex.http_status, 400);
    assert_non_null(strstr(err.msg, "answered 400: \"model does not exist\""));
    llm_exchange_free(&ex);
}

static void test_truncated_completion(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("length");
    c.price_out_per_mtok = 10;
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "truncated (finish_reason \"length\")"));
    assert_int_equal(ex.completion_tokens, 4096); /* a truncated reply is still paid for */
    assert_true(fabs(ex.cost_usd - 4096 * 10.0 / 1e6) < 1e-12);
    assert_null(ex.content);
    llm_exchange_free(&ex);
}

static void test_refusal(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("refusal");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg, "the model refused: \"I can't help with that.\"");
    llm_exchange_free(&ex);
}

static void test_echoed_key_is_masked(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("echo");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    char want[128];
    char stars[sizeof(KEY)];
    memset(stars, '*', sizeof(KEY) - 1);
    stars[sizeof(KEY) - 1] = '\0';
    snprintf(want, sizeof(want), "you sent Bearer %s and again Bearer %s\"", stars, stars);
    assert_non_null(strstr(ex.reply_body, want));
    assert_key_unrecorded(&ex, &err);
    llm_exchange_free(&ex);
}

static void test_escaped_key_echo_is_masked(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("echoesc");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    assert_non_null(strstr(ex.content, "\"rationale\":\"*****"));
    assert_key_unrecorded(&ex, &err);
    llm_exchange_free(&ex);

    c = cfg_for("leak401");
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "(401): \"bad key *****"));
    assert_key_unrecorded(&ex, &err);
    llm_exchange_free(&ex);
}

/* No string the text decodes to, at any depth of JSON in strings, holds KEY. */
static void assert_no_key_decoded(const char *text, size_t len, int depth)
{
    assert_null(memmem(text, len, KEY, strlen(KEY)));
    json_error_t je;
    json_t *doc = json_loadb(text, len, JSON_DECODE_ANY, &je);
    if (!doc || depth == 0) {
        json_decref(doc);
        return;
    }
    json_t *stack[64];
    size_t n = 0;
    stack[n++] = doc;
    while (n > 0) {
        json_t *v = stack[--n];
        if (json_is_string(v)) {
            assert_null(memmem(json_string_value(v), json_string_length(v), KEY, strlen(KEY)));
            assert_no_key_decoded(json_string_value(v), json_string_length(v), depth - 1);
        } else if (json_is_array(v)) {
            for (size_t i = 0; i < json_array_size(v) && n < 64; i++)
                stack[n++] = json_array_get(v, i);
        } else if (json_is_object(v)) {
            const char *k;
            json_t *m;
            json_object_foreach(v, k, m)
            {
                assert_null(strstr(k, KEY));
                if (n < 64)
                    stack[n++] = m;
            }
        }
    }
    json_decref(doc);
}

/* The audit's leak: the key echoed JSON-escaped, once in the envelope and
 * twice inside the content, reached the rationale and the record. */
static void test_twice_escaped_key_is_masked(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("echoesc2");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_OK);
    assert_key_unrecorded(&ex, &err);
    assert_no_key_decoded(ex.reply_body, ex.reply_len, 3);
    assert_no_key_decoded(ex.content, ex.content_len, 3);
    struct llm_proposal p;
    assert_int_equal(llm_reply_parse(ex.content, ex.content_len, &p, &err), KILN_OK);
    assert_null(strstr(p.rationale, KEY));
    assert_non_null(strstr(p.rationale, "*****"));
    llm_proposal_free(&p);
    /* The record as replay reads it back. */
    char *rec = llm_exchange_to_json(&ex, NULL);
    assert_non_null(rec);
    assert_no_key_decoded(rec, strlen(rec), 4);
    free(rec);
    llm_exchange_free(&ex);
}

/* Local servers run with placeholder keys; a prompt holding "EMPTY" is
 * not a leak of a secret. */
static void test_placeholder_key_is_not_a_secret(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("nousage");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(
        llm_chat(&c, "EMPTY", "s", "keep EMPTY buffers out of the hot loop", &ex, &err), KILN_OK);
    llm_exchange_free(&ex);
    kiln_err_clear(&err);
    assert_int_equal(llm_chat(&c, "x", "s", "max(x, y)", &ex, &err), KILN_OK);
    llm_exchange_free(&ex);
    /* A real key in a prompt is still refused. */
    kiln_err_clear(&err);
    assert_int_equal(llm_chat(&c, KEY, "s", "my key is " KEY, &ex, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "contains the API key"));
    llm_exchange_free(&ex);
}

/* "127.attacker.example" is a name, not the loopback address. */
static void test_loopback_is_parsed(void **state)
{
    (void)state;
    const char *remote[] = {"http://127.attacker.example/v1", "http://127.0.0.1.nip.io/v1",
                            "http://localhost.attacker.example/v1", "http://[::2]/v1",
                            "http://128.0.0.1/v1"};
    for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++) {
        struct llm_config c = cfg_for("good");
        c.base_url = remote[i];
        struct llm_exchange ex;
        struct kiln_err err = {0};
        assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_USAGE);
        assert_int_equal(ex.attempts, 0);
        assert_non_null(strstr(err.msg, "refusing to send the API key over plain http"));
        llm_exchange_free(&ex);
    }
}

static void test_redirect_not_followed(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("redirect");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_REJECTED);
    assert_int_equal(ex.http_status, 302);
    assert_int_equal(ex.attempts, 1);
    assert_non_null(strstr(err.msg, "redirect (302)"));
    llm_exchange_free(&ex);
}

static void test_wrong_path_404(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("good");
    char url[80];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/", server_port);
    c.base_url = url;
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_REJECTED);
    assert_int_equal(ex.http_status, 404);
    assert_non_null(strstr(err.msg, "answered 404: \"no route for /api/chat/completions\" "
                                    "(check --base-url and --model)"));
    llm_exchange_free(&ex);
}

static void test_connection_refused(void **state)
{
    (void)state;
    /* A port that was just free: bind, read the port, close. */
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &alen), 0);
    close(s);
    char url[80];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", ntohs(a.sin_port));
    struct llm_config c = cfg_for("good");
    c.base_url = url;
    c.max_retries = 1;
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_IO);
    assert_int_equal(ex.attempts, 2);
    assert_int_equal(ex.http_status, 0);
    assert_non_null(strstr(err.msg, "failed after 2 attempts"));
    llm_exchange_free(&ex);
}

static void test_refuses_key_over_plain_http(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("good");
    c.base_url = "http://api.example.invalid/v1";
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_USAGE);
    assert_int_equal(ex.attempts, 0);
    assert_string_equal(err.msg, "refusing to send the API key over plain http to "
                                 "api.example.invalid: use https, or no key for a local server");
    llm_exchange_free(&ex);

    kiln_err_clear(&err);
    c.base_url = "file:///etc/passwd";
    assert_int_equal(llm_chat(&c, NULL, "s", "u", &ex, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "only http and https are supported"));
    llm_exchange_free(&ex);
}

static void test_refuses_key_in_prompt(void **state)
{
    (void)state;
    struct llm_config c = cfg_for("good");
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "my key is " KEY, &ex, &err), KILN_E_USAGE);
    assert_int_equal(ex.attempts, 0);
    assert_null(strstr(err.msg, KEY));
    llm_exchange_free(&ex);
}

static void test_bad_config(void **state)
{
    (void)state;
    struct llm_config c = cfg_for(NULL);
    struct llm_exchange ex;
    struct kiln_err err = {0};
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "no model given"));
    c = cfg_for("good");
    c.max_retries = -1;
    kiln_err_clear(&err);
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_USAGE);
    kiln_err_clear(&err);
    c.max_retries = 0;
    c.max_reply_bytes = (size_t)-1;
    assert_int_equal(llm_chat(&c, KEY, "s", "u", &ex, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "max_reply_bytes"));
    kiln_err_clear(&err);
    c.max_reply_bytes = 0;
    assert_int_equal(llm_chat(&c, "sk-bad\r\nX-Injected: 1", "s", "u", &ex, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "control character"));
    kiln_err_clear(&err);
    assert_int_equal(llm_chat(&c, KEY, "s", "bad utf8 \xff", &ex, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "not valid UTF-8"));
    llm_exchange_free(&ex);
}

int main(void)
{
    /* The fake server is local: make sure no proxy from the environment
     * intercepts 127.0.0.1. */
    static const char *const proxies[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
                                          "HTTPS_PROXY", "all_proxy",  "ALL_PROXY"};
    for (size_t i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++)
        unsetenv(proxies[i]);
    int rc = start_server();
    if (rc != 0) {
        stop_server();
        return rc;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        stop_server();
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_reply),
        cmocka_unit_test(test_no_key_sends_no_header),
        cmocka_unit_test(test_no_usage),
        cmocka_unit_test(test_fenced_reply),
        cmocka_unit_test(test_malformed_content),
        cmocka_unit_test(test_missing_field),
        cmocka_unit_test(test_envelope_not_json),
        cmocka_unit_test(test_huge_reply_with_length),
        cmocka_unit_test(test_huge_reply_streamed),
        cmocka_unit_test(test_small_cap),
        cmocka_unit_test(test_401),
        cmocka_unit_test(test_429_then_success),
        cmocka_unit_test(test_5xx_then_success),
        cmocka_unit_test(test_500_exhausts_retries),
        cmocka_unit_test(test_never_answers),
        cmocka_unit_test(test_json_schema_fallback),
        cmocka_unit_test(test_400_after_fallback),
        cmocka_unit_test(test_truncated_completion),
        cmocka_unit_test(test_refusal),
        cmocka_unit_test(test_echoed_key_is_masked),
        cmocka_unit_test(test_escaped_key_echo_is_masked),
        cmocka_unit_test(test_twice_escaped_key_is_masked),
        cmocka_unit_test(test_placeholder_key_is_not_a_secret),
        cmocka_unit_test(test_loopback_is_parsed),
        cmocka_unit_test(test_redirect_not_followed),
        cmocka_unit_test(test_wrong_path_404),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test(test_refuses_key_over_plain_http),
        cmocka_unit_test(test_refuses_key_in_prompt),
        cmocka_unit_test(test_bad_config),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    stop_server();
    return rc;
}
