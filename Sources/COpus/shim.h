#ifndef ARIATA_COPUS_SHIM_H
#define ARIATA_COPUS_SHIM_H
#include <opus/opus.h>
#include <opusenc.h>

/* ope_encoder_ctl is variadic; typed wrappers for the requests the agent uses. */
static inline int ariata_ope_set_bitrate(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPUS_SET_BITRATE(v)); }
static inline int ariata_ope_set_frame_duration(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPUS_SET_EXPERT_FRAME_DURATION(v)); }
static inline int ariata_ope_get_lookahead(OggOpusEnc *e, opus_int32 *v) { return ope_encoder_ctl(e, OPUS_GET_LOOKAHEAD(v)); }
static inline int ariata_ope_set_bandwidth(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPUS_SET_BANDWIDTH(v)); }
static inline int ariata_ope_set_signal_voice(OggOpusEnc *e) { return ope_encoder_ctl(e, OPUS_SET_SIGNAL(OPUS_SIGNAL_VOICE)); }
static inline int ariata_ope_set_complexity(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPUS_SET_COMPLEXITY(v)); }
static inline int ariata_ope_set_application(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPUS_SET_APPLICATION(v)); }
static inline int ariata_ope_set_comment_padding(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPE_SET_COMMENT_PADDING(v)); }
static inline int ariata_ope_set_lsb_depth(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPUS_SET_LSB_DEPTH(v)); }
/* How much audio libopusenc holds before encoding (default 96000 at 48 kHz = 2 s) and the
   longest a page may wait before it is written (default 48000 = 1 s), in 48 kHz samples:
   the journal lowers both so pages reach the disk promptly. */
static inline int ariata_ope_set_decision_delay(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPE_SET_DECISION_DELAY(v)); }
static inline int ariata_ope_set_muxing_delay(OggOpusEnc *e, opus_int32 v) { return ope_encoder_ctl(e, OPE_SET_MUXING_DELAY(v)); }
#endif
