"""Model definitions users load and fine-tune: GPT-2 with Hugging Face's names and files."""
from .gpt2 import CausalLMOutput, GPT2Config, GPT2LMHeadModel, GPT2Model
from .lora import LoRALayer, inject_lora, load_lora, lora_state_dict, merge_lora, save_lora, unmerge_lora
from .tokenization import CharTokenizer, GPT2Tokenizer

__all__ = ["GPT2Config", "GPT2Model", "GPT2LMHeadModel", "CausalLMOutput", "GPT2Tokenizer", "CharTokenizer",
           "LoRALayer", "inject_lora", "lora_state_dict", "save_lora", "load_lora", "merge_lora", "unmerge_lora"]
