// The C++ API's options (ovfix::ConversionOptions) as the pipeline takes them: through the
// same translation as the command line's flags (converter/user_options.h), so that the same
// options write the same bytes; tests/converter/ compares the two.
#pragma once

#include "absl/status/statusor.h"
#include "converter/pipeline.h"
#include "converter/user_options.h"
#include "ovfix/ovfix.h"

namespace ovfix::api {

// The table's options `options` gives, as the command line's texts (api::MemberTexts).
converter::UserOptions GivenOptions(const ConversionOptions& options);

// The pipeline's options for `options`, before the calls add the model, the output and the
// calibration arrays; errors name the option ("tolerance: must be >= 0").
absl::StatusOr<converter::PipelineOptions> PipelineOptionsOf(const ConversionOptions& options);

}  // namespace ovfix::api
