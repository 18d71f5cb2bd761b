// `leap score --model DIR --tokens 1,2,3,...`: prints {"logprobs": [...]}, where entry t-1 is
// log p(token t | tokens before it) for t = 1..T-1, under the checkpoint in DIR, on the backend
// of `backend.name` (cpu by default; cuda on GPU 0).
// Bad input (no model, bad ids, a broken checkpoint) is a message naming it and exit code 2.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "apps/app_options.h"
#include "apps/policy_backend.h"
#include "apps/subcommands.h"
#include "model/checkpoint.h"
#include "model/model_options.h"

namespace leap::app {
namespace {

// "1, 2,3" -> {1, 2, 3}; anything that is not a comma-separated list of integers is an error.
Expected<std::vector<int32_t>> parse_token_list(const std::string& text) {
  std::vector<int32_t> ids;
  for (const std::string& item : split_list(text)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < INT32_MIN || v > INT32_MAX)
      return invalid_input(fmt::format(
          "--tokens: '{}' is not an integer token id (expected e.g. --tokens 1,2,3)", item));
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

}  // namespace

int run_score(const std::vector<std::string>& args) {
  OptionSet opts;
  model::ModelOptions model_opts;
  std::string tokens_text, backend_name;
  model_opts.declare(opts);
  declare_backend_name(opts, &backend_name);
  opts.add("score.tokens", &tokens_text, std::string(""),
           "Comma-separated token ids to score (at least 2).", {.alias = "tokens"});
  if (int rc = parse_or_exit("score", "--model DIR --tokens 1,2,3,...", args, opts); rc >= 0)
    return rc;
  auto fail = [](const Status& st) { return report_error("score", st); };
  if (model_opts.path.empty())
    return fail(invalid_input("--model DIR is required (a folder with config.json)"));
  auto ids = parse_token_list(tokens_text);
  if (!ids) return fail(ids.status());
  if (ids->size() < 2) return fail(invalid_input("--tokens needs at least 2 token ids"));

  auto devices = cuda::probe_devices();
  if (!devices) return fail(devices.status());
  if (Status st = check_backend_choice(backend_name, *devices); !st) return fail(st);
  auto be = make_policy_backend(backend_name, 0, 0);
  if (!be) return fail(be.status());
  auto model = model::load_model(model_opts.path, *be->backend);
  if (!model) return fail(model.status());
  const auto batch = model::TokenBatch::from_sequences({*ids});
  std::vector<float> lp(ids->size());
  if (Status st = (*model)->forward(batch, lp.data()); !st)
    return fail(st.with_context("--tokens"));
  std::string out = "{\"logprobs\": [";
  for (size_t t = 1; t < lp.size(); ++t) out += fmt::format("{}{}", t > 1 ? ", " : "", lp[t]);
  out += "]}\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace leap::app
