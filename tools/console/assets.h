/*
 * assets — the console's pages, script and style, built into the program
 * (tools/console/assets/, turned into C strings by scripts/embed-assets at
 * build time): nothing to install beside the binary, no CDN, and a page
 * served is always the one the binary was built with.
 */
#ifndef LAPSE_CONSOLE_ASSETS_H
#define LAPSE_CONSOLE_ASSETS_H

#include <stddef.h>

struct lapse_asset {
    const char *path; /* as requested: "/app.js" */
    const char *type; /* its Content-Type */
    const char *data; /* its bytes */
    size_t len;       /* their count */
};

/* The embedded file at `path` ("/" is "/index.html"), or NULL. */
const struct lapse_asset *lapse_assets_find(const char *path);

#endif
