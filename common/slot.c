/*
 * slot — see slot.h. CRC16 with polynomial 0x1021, initial value 0, no
 * reflection (XMODEM), bit by bit: keys are short and this is computed once
 * per shard key name, not per operation.
 */
#include "slot.h"

static uint16_t slot_crc16(const char *b, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)b[i] << 8);
        for (int k = 0; k < 8; k++)
            crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

int lapse_slot_tag(const char *key, size_t len, size_t *off, size_t *tag_len)
{
    size_t open = 0;
    while (open < len && key[open] != '{')
        open++;
    if (open == len)
        return 0;
    size_t close = open + 1;
    while (close < len && key[close] != '}')
        close++;
    if (close == len || close == open + 1) /* "{}" is no tag: the whole key counts */
        return 0;
    *off = open + 1;
    *tag_len = close - open - 1;
    return 1;
}

uint16_t lapse_slot(const char *key, size_t len)
{
    size_t off, tl;
    if (lapse_slot_tag(key, len, &off, &tl))
        return slot_crc16(key + off, tl) & (LAPSE_SLOTS - 1);
    return slot_crc16(key, len) & (LAPSE_SLOTS - 1);
}
