/* cmd_docs.c - `kiln docs search`: the documentation the llm proposer can quote. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "docs_index.h"
#include "strbuf.h"

static int print_json(const char *query, const struct docs_index *ix, const struct docs_hits *h)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < h->n; i++)
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s, s:s, s:f}", "id", h->v[i].id,
                                              "title", h->v[i].title, "topic", h->v[i].topic,
                                              "source", h->v[i].source, "excerpt", h->v[i].excerpt,
                                              "bm25", h->v[i].score));
    json_t *doc = list ? json_pack("{s:i, s:s, s:s, s:I, s:o}", "version", 1, "query", query,
                                   "index", docs_index_digest(ix), "indexed_passages",
                                   (json_int_t)docs_index_count(ix), "passages", list)
                       : NULL;
    char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    if (!text) {
        fprintf(stderr, "kiln: docs search: out of memory\n");
        return KILN_EXIT_USAGE;
    }
    printf("%s\n", text);
    free(text);
    return h->n ? KILN_EXIT_OK : KILN_EXIT_FAIL;
}

static void print_text(const struct docs_hits *h)
{
    for (size_t i = 0; i < h->n; i++) {
        const struct docs_hit *x = &h->v[i];
        printf("%zu. %s  [%s]\n   source: %s\n   %s\n%s", i + 1, x->title, x->id, x->source,
               x->excerpt, i + 1 < h->n ? "\n" : "");
    }
}

static int docs_search(const struct kiln_cmd *self, int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_HELP_OPTION, {"limit", required_argument, NULL, 'k'},    CLI_OPTS_JSON,
        CLI_OPTS_QUIET,  {"docs-dir", required_argument, NULL, 'D'}, {0, 0, 0, 0}};
    long limit = 5;
    enum cli_output out = CLI_OUT_TEXT;
    struct kiln_err usage = KILN_ERR_INIT;
    int done = 0, c;
    const char *dir = NULL;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1) {
        switch (c) {
        case 'k':
            if (cli_parse_long(optarg, 1, DOCS_LIMIT_MAX, &limit))
                return cli_usage_error("docs", "--limit needs 1..%d, got '%s'", DOCS_LIMIT_MAX,
                                       optarg);
            break;
        case 'D':
            dir = optarg;
            break;
        default:
            if (cli_output_option(c, &out, NULL, &usage) != KILN_OK)
                return cli_usage_report("docs", &usage);
            break;
        }
    }
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind >= argc)
        return cli_usage_error("docs", "search needs a QUERY (words to look for)");
    struct strbuf q;
    strbuf_init(&q);
    for (int i = optind; i < argc; i++)
        strbuf_printf(&q, "%s%s", i > optind ? " " : "", argv[i]);
    char *query = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    struct docs_index *ix = NULL;
    struct docs_hits hits = {0};
    enum kiln_rc rc = strbuf_finish(&q, &query, &err);
    if (rc == KILN_OK)
        rc = dir ? docs_index_open_user(dir, &ix, &err) : docs_index_open_builtin(&ix, &err);
    if (rc == KILN_OK)
        rc = docs_index_search(ix, query, (size_t)limit, &hits, &err);
    int status;
    if (rc != KILN_OK) {
        cli_report("docs search", &err);
        status = rc == KILN_E_REJECTED || rc == KILN_E_LIMIT ? KILN_EXIT_FAIL : KILN_EXIT_USAGE;
    } else if (out == CLI_OUT_JSON) {
        status = print_json(query, ix, &hits);
    } else if (out == CLI_OUT_QUIET) {
        status = hits.n ? KILN_EXIT_OK : KILN_EXIT_FAIL; /* as grep -q */
    } else if (hits.n == 0) {
        fprintf(stderr, "kiln: docs search: no passage matches \"%s\" (%zu passages indexed)\n",
                query, docs_index_count(ix));
        status = KILN_EXIT_FAIL;
    } else {
        print_text(&hits);
        status = KILN_EXIT_OK;
    }
    docs_hits_free(&hits);
    docs_index_close(ix);
    free(query);
    return status;
}

int cmd_docs(int argc, char **argv)
{
    const struct kiln_cmd *self = cli_find("docs");
    if (argc >= 2 && strcmp(argv[1], "search") == 0)
        return docs_search(self, argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(self->help, stdout);
        return KILN_EXIT_OK;
    }
    return cli_usage_error("docs", "the subcommand is search (kiln docs search QUERY)");
}
