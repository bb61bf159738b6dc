// The small static FFmpeg of scripts/setup-video.sh (pkg-config: liva-video), for CLIVAVideo.
#include <libavcodec/avcodec.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
