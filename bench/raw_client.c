/*
 * raw_client: the floor/ceiling baselines. A minimal HTTP/1.1 keep-alive client on a raw
 * TCP_NODELAY socket, with no SDK: just enough to speak Connect to the bridge.
 *
 *   raw_client ping   <url> <token> <n>      n x POST SdkBridgeControlService/Ping, application/proto,
 *                                            empty body, one kept-alive connection: ns per call
 *   raw_client stream <url> <token> <n>      CreateAgent (JSON), then POST SdkAgentService/Send with
 *                                            application/connect+proto "scenario:long:<n>", counting
 *                                            frames (no decoding beyond the envelope)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "measure.h"

static void fail(const char *m) {
    fprintf(stderr, "raw_client: %s\n", m);
    exit(1);
}

/* --- a buffered socket reader --- */
typedef struct {
    int fd;
    char *buf;
    size_t cap, start, end;
} conn;

static int conn_fill(conn *c) {
    if (c->start > 0 && c->start == c->end) c->start = c->end = 0;
    if (c->end == c->cap) {
        if (c->start > 0) {
            memmove(c->buf, c->buf + c->start, c->end - c->start);
            c->end -= c->start;
            c->start = 0;
        } else {
            c->cap *= 2;
            c->buf = realloc(c->buf, c->cap);
        }
    }
    ssize_t r = read(c->fd, c->buf + c->end, c->cap - c->end);
    if (r <= 0) return -1;
    c->end += (size_t)r;
    return 0;
}

/* Ensures n bytes are buffered. */
static void conn_need(conn *c, size_t n) {
    while (c->end - c->start < n) {
        if (c->end - c->start + (c->cap - c->end) < n && c->start > 0) {
            memmove(c->buf, c->buf + c->start, c->end - c->start);
            c->end -= c->start;
            c->start = 0;
        }
        while (c->cap < n) {
            c->cap *= 2;
            c->buf = realloc(c->buf, c->cap);
        }
        if (conn_fill(c)) fail("connection closed");
    }
}

static conn connect_url(const char *url) {
    const char *hp = strstr(url, "://");
    hp = hp ? hp + 3 : url;
    char host[256];
    const char *colon = strrchr(hp, ':');
    if (!colon) fail("url without port");
    snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
    int port = atoi(colon + 1);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, strcmp(host, "localhost") ? host : "127.0.0.1", &sa.sin_addr) != 1)
        fail("bad host");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) fail("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conn c = {fd, malloc(65536), 65536, 0, 0};
    return c;
}

static void write_all(int fd, const void *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) fail("write");
        p = (const char *)p + w;
        n -= (size_t)w;
    }
}

/* Reads a response head; returns the status, sets *clen (-1 when chunked). */
static int read_head(conn *c, long *clen) {
    for (;;) {
        char *p = memmem(c->buf + c->start, c->end - c->start, "\r\n\r\n", 4);
        if (p) {
            size_t hlen = (size_t)(p - (c->buf + c->start)) + 4;
            char *h = c->buf + c->start;
            int status = atoi(h + 9);
            *clen = 0;
            char *cl = memmem(h, hlen, "\ncontent-length:", 16);
            if (!cl) cl = memmem(h, hlen, "\nContent-Length:", 16);
            if (cl) *clen = strtol(cl + 16, NULL, 10);
            if (memmem(h, hlen, "chunked", 7)) *clen = -1;
            c->start += hlen;
            return status;
        }
        if (conn_fill(c)) fail("connection closed in head");
    }
}

/* Reads one chunk-size line; returns the size. */
static size_t read_chunk_size(conn *c) {
    for (;;) {
        char *p = memmem(c->buf + c->start, c->end - c->start, "\r\n", 2);
        if (p) {
            size_t v = strtoul(c->buf + c->start, NULL, 16);
            c->start = (size_t)(p - c->buf) + 2;
            return v;
        }
        if (conn_fill(c)) fail("connection closed in chunk");
    }
}

/* Discards a body (content-length or chunked). */
static void skip_body(conn *c, long clen) {
    if (clen >= 0) {
        conn_need(c, (size_t)clen);
        c->start += (size_t)clen;
        return;
    }
    for (;;) {
        size_t n = read_chunk_size(c);
        conn_need(c, n + 2);
        c->start += n + 2;
        if (n == 0) return;
    }
}

static int cmd_ping(const char *url, const char *token, long n) {
    conn c = connect_url(url);
    char req[1024];
    int len = snprintf(req, sizeof req,
                       "POST /sdk.v1.SdkBridgeControlService/Ping HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Authorization: Bearer %s\r\nContent-Type: application/proto\r\n"
                       "Connect-Protocol-Version: 1\r\nContent-Length: 0\r\n\r\n",
                       token);
    uint64_t *ns = calloc((size_t)n, sizeof *ns), cpu0 = 0;
    for (long i = -50; i < n; i++) {
        if (i == 0) cpu0 = cpu_ns();
        uint64_t t = now_ns();
        write_all(c.fd, req, (size_t)len);
        long clen;
        int st = read_head(&c, &clen);
        if (st != 200) fail("ping status != 200");
        skip_body(&c, clen);
        if (i >= 0) ns[i] = now_ns() - t;
    }
    printf("{\"cpu_ns\":%llu,\"ns\":[", (unsigned long long)(cpu_ns() - cpu0));
    for (long i = 0; i < n; i++) printf(i ? ",%llu" : "%llu", (unsigned long long)ns[i]);
    printf("]}\n");
    return 0;
}

/* Reads exactly n body bytes of a chunked body into out (chunk boundaries are transparent). */
typedef struct {
    conn *c;
    size_t left; /* bytes left in the current chunk */
    int done;
} chunked;

static int chunked_read(chunked *k, char *out, size_t n) {
    while (n) {
        if (k->left == 0) {
            if (k->done) return -1;
            k->left = read_chunk_size(k->c);
            if (k->left == 0) {
                k->done = 1;
                conn_need(k->c, 2);
                k->c->start += 2;
                return -1;
            }
        }
        size_t take = n < k->left ? n : k->left;
        conn_need(k->c, take);
        if (out) {
            memcpy(out, k->c->buf + k->c->start, take);
            out += take;
        }
        k->c->start += take;
        k->left -= take;
        n -= take;
        if (k->left == 0) {
            conn_need(k->c, 2);
            k->c->start += 2; /* CRLF after the chunk */
        }
    }
    return 0;
}

static int cmd_stream(const char *url, const char *token, long n) {
    conn c = connect_url(url);
    /* CreateAgent (unary JSON) on the same connection. */
    const char *body = "{\"options\":{\"model\":{\"id\":\"composer-2\"},\"apiKey\":\"k\"}}";
    char req[2048];
    int len = snprintf(req, sizeof req,
                       "POST /sdk.v1.SdkAgentService/CreateAgent HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\n\r\n%s",
                       token, strlen(body), body);
    write_all(c.fd, req, (size_t)len);
    long clen;
    if (read_head(&c, &clen) != 200 || clen <= 0) fail("CreateAgent failed");
    conn_need(&c, (size_t)clen);
    char resp[4096];
    snprintf(resp, sizeof resp, "%.*s", (int)clen, c.buf + c.start);
    c.start += (size_t)clen;
    char *id = strstr(resp, "\"agentId\":\"");
    if (!id) fail("no agentId");
    id += 11;
    *strchr(id, '"') = 0;

    /* SendRequest{agent_id=1, message=2 UserMessage{text=1}} in proto, in one Connect envelope. */
    char text[64];
    int tlen = snprintf(text, sizeof text, "scenario:long:%ld", n);
    unsigned char msg[512];
    size_t m = 5, idlen = strlen(id);
    msg[m++] = 0x0a;
    msg[m++] = (unsigned char)idlen;
    memcpy(msg + m, id, idlen);
    m += idlen;
    msg[m++] = 0x12;
    msg[m++] = (unsigned char)(tlen + 2);
    msg[m++] = 0x0a;
    msg[m++] = (unsigned char)tlen;
    memcpy(msg + m, text, (size_t)tlen);
    m += (size_t)tlen;
    uint32_t plen = (uint32_t)(m - 5);
    msg[0] = 0;
    msg[1] = (unsigned char)(plen >> 24);
    msg[2] = (unsigned char)(plen >> 16);
    msg[3] = (unsigned char)(plen >> 8);
    msg[4] = (unsigned char)plen;
    len = snprintf(req, sizeof req,
                   "POST /sdk.v1.SdkAgentService/Send HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Authorization: Bearer %s\r\nContent-Type: application/connect+proto\r\n"
                   "Connect-Protocol-Version: 1\r\nContent-Length: %zu\r\n\r\n",
                   token, m);
    reset_hwm(); /* as bench_sdk does: the peak of the stream alone */
    long rss0 = proc_kb("VmRSS");
    uint64_t t0 = now_ns(), first = 0, cpu0 = cpu_ns();
    write_all(c.fd, req, (size_t)len);
    write_all(c.fd, msg, m);
    int status = read_head(&c, &clen);
    if (status != 200) fail("Send status != 200");
    long frames = 0, data_frames = 0;
    int ended = 0;
    unsigned char hdr[5];
    char *payload = malloc(1 << 20);
    size_t pcap = 1 << 20;
    if (clen != -1) fail("Send response is not chunked");
    chunked k = {&c, 0, 0};
    while (chunked_read(&k, (char *)hdr, 5) == 0) {
        uint32_t fl = ((uint32_t)hdr[1] << 24) | ((uint32_t)hdr[2] << 16) | ((uint32_t)hdr[3] << 8) | hdr[4];
        if (fl > pcap) {
            pcap = fl;
            payload = realloc(payload, pcap);
        }
        if (chunked_read(&k, payload, fl)) fail("truncated frame");
        if (!first) first = now_ns();
        frames++;
        if (hdr[0] & 0x02) {
            ended = 1;
            if (fl > 2) fail("end frame carries an error");
        } else if (fl > 0)
            data_frames++;
    }
    uint64_t t1 = now_ns(), cpu = cpu_ns() - cpu0;
    if (!ended) fail("no end frame");
    printf("{\"frames\":%ld,\"data_frames\":%ld,\"total_ns\":%llu,\"cpu_ns\":%llu,\"first_event_ns\":%llu,"
           "\"rss_before_kb\":%ld,\"hwm_kb\":%ld}\n",
           frames, data_frames, (unsigned long long)(t1 - t0), (unsigned long long)cpu,
           (unsigned long long)(first - t0), rss0, proc_kb("VmHWM"));
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: raw_client ping|stream <url> <token> <n>\n");
        return 2;
    }
    long n = atol(argv[4]);
    if (!strcmp(argv[1], "ping")) return cmd_ping(argv[2], argv[3], n);
    if (!strcmp(argv[1], "stream")) return cmd_stream(argv[2], argv[3], n);
    return 2;
}
