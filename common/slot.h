/*
 * slot — the Redis Cluster hash slot of a key (CRC16/XMODEM of the key, or of
 * its hash tag, modulo 16384), as CLUSTER KEYSLOT computes it: a client
 * routes each key to the primary that owns its slot.
 *
 * Hash tag: when the key holds a '{' followed later by a '}' with at least
 * one byte between them, only the bytes between the first '{' and the first
 * '}' after it are hashed, so keys sharing a tag share a slot.
 */
#ifndef LAPSE_SLOT_H
#define LAPSE_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define LAPSE_SLOTS 16384

uint16_t lapse_slot(const char *key, size_t len);

/* Where key's hash tag is: 1 with its offset and length (the bytes between
 * the braces), or 0 when it has none (then the whole key is hashed). */
int lapse_slot_tag(const char *key, size_t len, size_t *off, size_t *tag_len);

#endif
