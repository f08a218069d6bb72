/* Helpers shared by the C suites: clients in temp dirs, agents, draining runs, log capture. */
#ifndef CURSOR_SDK_TEST_COMMON_H
#define CURSOR_SDK_TEST_COMMON_H

#include "harness.h"

/* A client (bridge at `bridge`) living in its own temp dir, with one agent. */
typedef struct {
    h_env_t *tmp;
    cursor_client *client;
    cursor_agent *agent;
} fixture;

static inline bool fx_open(fixture *f, const char *bridge, const char *extra) {
    memset(f, 0, sizeof *f);
    if (!bridge) return false;
    f->tmp = h_tmp_new();
    cursor_error *e = NULL;
    int st = cursor_client_new(h_options(f->tmp, bridge, extra), &f->client, &e);
    if (st != CURSOR_OK) {
        h_fail(__FILE__, __LINE__, "cursor_client_new: %s", h_msg(e));
        cursor_error_free(e);
        return false;
    }
    st = cursor_agent_create(f->client, "{\"model\":\"composer-2\"}", &f->agent, &e);
    if (st != CURSOR_OK) {
        h_fail(__FILE__, __LINE__, "cursor_agent_create: %s", h_msg(e));
        cursor_error_free(e);
        return false;
    }
    return true;
}

static inline void fx_close(fixture *f) {
    cursor_agent_free(f->agent);
    cursor_client_free(f->client);
    h_tmp_free(f->tmp);
    memset(f, 0, sizeof *f);
}

/* What a drained run delivered. */
#define MAX_EVENTS 4096
typedef struct {
    int n;
    int kinds[MAX_EVENTS];
    char types[MAX_EVENTS][24];
    char offsets[MAX_EVENTS][16];
    char text[65536];
    int end_status;         /* CURSOR_END, or the error status */
    int error_kind;         /* kind of the reported error, 0 if none */
    char error_msg[512];
    int after_error_status; /* what the call after the error returned */
} drained;

static inline void record_event(drained *d, const cursor_event *ev) {
    if (d->n < MAX_EVENTS) {
        d->kinds[d->n] = (int)cursor_event_kind(ev);
        snprintf(d->types[d->n], sizeof d->types[d->n], "%s", cursor_event_type(ev));
        const char *off = cursor_event_offset(ev);
        snprintf(d->offsets[d->n], sizeof d->offsets[d->n], "%s", off ? off : "");
    }
    d->n++;
    const char *t = cursor_event_text(ev);
    if (t && strcmp(cursor_event_type(ev), "assistant") == 0) {
        strncat(d->text, t, sizeof d->text - strlen(d->text) - 1);
    }
}

/* Reads every event with blocking next_event until END or an error. Returns false on a
 * harness-level problem (NULL event on OK, …). */
static inline bool drain(cursor_run *r, drained *d) {
    memset(d, 0, sizeof *d);
    for (;;) {
        cursor_event *ev = (cursor_event *)(uintptr_t)1; /* must be overwritten */
        cursor_error *e = NULL;
        int st = cursor_run_next_event(r, 30000, &ev, &e);
        if (st == CURSOR_OK) {
            if (!ev || e) {
                h_fail(__FILE__, __LINE__, "next_event OK with event %p, error %p", (void *)ev, (void *)e);
                return false;
            }
            record_event(d, ev);
            cursor_event_free(ev);
            continue;
        }
        if (ev != NULL) {
            h_fail(__FILE__, __LINE__, "next_event %s left *out non-NULL", cursor_status_name(st));
            return false;
        }
        if (st == CURSOR_TIMEOUT) {
            h_fail(__FILE__, __LINE__, "next_event timed out after 30 s");
            return false;
        }
        if (st == CURSOR_END) {
            if (e) {
                h_fail(__FILE__, __LINE__, "CURSOR_END with an error object");
                cursor_error_free(e);
                return false;
            }
            if (!d->end_status) d->end_status = CURSOR_END;
            return true;
        }
        /* An error: reported once, then CURSOR_END follows. */
        if (!e) {
            h_fail(__FILE__, __LINE__, "next_event %s without an error object", cursor_status_name(st));
            return false;
        }
        if (cursor_error_kind(e) != st) {
            h_fail(__FILE__, __LINE__, "status %d but error kind %d", st, (int)cursor_error_kind(e));
        }
        d->end_status = st;
        d->error_kind = (int)cursor_error_kind(e);
        snprintf(d->error_msg, sizeof d->error_msg, "%s", h_msg(e));
        cursor_error_free(e);
        d->after_error_status = cursor_run_next_event(r, 5000, &ev, NULL);
        if (d->after_error_status == CURSOR_OK) cursor_event_free(ev);
        return true;
    }
}

/* ---- log capture ---- */

#define MAX_LOG_LINES 2048
typedef struct {
    pthread_mutex_t lock;
    int n;
    int bad_level;
    char *lines[MAX_LOG_LINES];
} log_capture;

static inline void log_capture_fn(void *user_data, cursor_log_level level, const char *message) {
    log_capture *c = (log_capture *)user_data;
    pthread_mutex_lock(&c->lock);
    if (level < CURSOR_LOG_ERROR || level > CURSOR_LOG_DEBUG || !message) c->bad_level++;
    if (c->n < MAX_LOG_LINES && message) c->lines[c->n++] = strdup(message);
    pthread_mutex_unlock(&c->lock);
}

static inline void log_capture_clear(log_capture *c) {
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n; i++) free(c->lines[i]);
    c->n = 0;
    pthread_mutex_unlock(&c->lock);
}

static inline bool is_b64url(char ch) {
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
}

/* Whether `line` holds a run of exactly 43 base64url characters (the token's shape) that
 * mixes upper case, lower case and digits (so words-with-dashes do not count). */
static inline bool has_token_shape(const char *line) {
    const char *p = line;
    while (*p) {
        while (*p && !is_b64url(*p)) p++;
        const char *s = p;
        int up = 0, lo = 0, dig = 0;
        while (*p && is_b64url(*p)) {
            up |= (*p >= 'A' && *p <= 'Z');
            lo |= (*p >= 'a' && *p <= 'z');
            dig |= (*p >= '0' && *p <= '9');
            p++;
        }
        if (p - s == 43 && up && lo && dig) return true;
    }
    return false;
}

#endif
