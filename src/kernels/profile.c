/* The stages' names (profile.h). */
#include "kernels/profile.h"

const char *const hv_stage_names[HV_N_STAGES] = {
    [HV_STAGE_SUB_CONV] = "subsampling_conv",     [HV_STAGE_SUB_LINEAR] = "subsampling_linear",
    [HV_STAGE_FF_LINEAR] = "ff_linear",           [HV_STAGE_ATTN_LINEAR] = "attn_linear",
    [HV_STAGE_POS_LINEAR] = "pos_linear",         [HV_STAGE_ATTN_PRODUCTS] = "attn_products",
    [HV_STAGE_ATTN_SOFTMAX] = "attn_softmax",     [HV_STAGE_ATTN_STAGING] = "attn_staging",
    [HV_STAGE_CONV_POINTWISE] = "conv_pointwise", [HV_STAGE_CONV_DEPTHWISE] = "conv_depthwise",
    [HV_STAGE_LAYERNORM] = "layernorm",           [HV_STAGE_ELEMENTWISE] = "elementwise",
    [HV_STAGE_BF16_CONVERT] = "bf16_convert",     [HV_STAGE_PROJ_LINEAR] = "proj_linear",
};
