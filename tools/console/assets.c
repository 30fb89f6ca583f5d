/*
 * assets — see assets.h. The table itself is generated
 * (build/.../tools/console/assets_data.c, scripts/embed-assets).
 */
#include "assets.h"

#include <string.h>

extern const struct lapse_asset lapse_assets_table[];
extern const size_t lapse_assets_count;

const struct lapse_asset *lapse_assets_find(const char *path)
{
    if (strcmp(path, "/") == 0)
        path = "/index.html";
    for (size_t i = 0; i < lapse_assets_count; i++)
        if (strcmp(lapse_assets_table[i].path, path) == 0)
            return &lapse_assets_table[i];
    return NULL;
}
